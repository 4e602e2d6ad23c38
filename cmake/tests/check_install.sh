#!/usr/bin/env bash
# check_install.sh <build-dir> <source-dir>: installs the build into a temporary prefix, then
# configures, builds and runs find_package_consumer against it.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/cmake/tests/find_package_consumer" -B "$tmp/consumer" -G Ninja \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/consumer" >/dev/null
LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}" "$tmp/consumer/consumer"
# The installed header list is explicit: no sources, tests, test support or private headers,
# and every "lmcache/..." include of an installed header is itself installed.
inc="$tmp/prefix/include"
bad=$(find "$inc/lmcache" -type f ! -name '*.h' -o -path '*/internal/*' -o -name '*_test*' \
      -o -path '*/testing/*' -o -name '*test_support*')
test -z "$bad" || { echo "installed but private: $bad"; exit 1; }
bad=$(grep -l -E '^// *(Internal|Test-only)' -r "$inc/lmcache" || true)
test -z "$bad" || { echo "installed headers that call themselves internal: $bad"; exit 1; }
missing=$(grep -h -o -E '#include "lmcache/[^"]+"' -r "$inc/lmcache" | sed -E 's/#include "(.*)"/\1/' \
          | sort -u | while read -r h; do test -e "$inc/$h" || echo "$h"; done)
test -z "$missing" || { echo "installed headers include headers that are not installed: $missing"; exit 1; }
echo "installed tree works with find_package(lmcache)"
