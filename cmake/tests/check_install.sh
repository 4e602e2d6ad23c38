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
test ! -e "$tmp/prefix/include/lmcache/core/bitmap_test.cc" || { echo "test sources installed"; exit 1; }
echo "installed tree works with find_package(lmcache)"
