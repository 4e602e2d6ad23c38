#!/usr/bin/env bash
# install_example_test.sh <build-dir> <source-dir>: installs the build into a temporary prefix,
# then configures conformance/examples against it as an out-of-tree vendor would
# (find_package(lmcache_conformance)), builds it, runs its link-time conformance test, and runs
# the installed lmcache-conform on the example plugin, expecting both reports. Then the same for
# the native connector example (conformance/examples/connector): built against the prefix, its
# plugin must pass `lmcache-conform --connector-plugin` (exit 0). Then `--python` from the prefix.
set -euo pipefail
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/conformance/examples" -B "$tmp/example" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/configure.log" 2>&1 || { cat "$tmp/configure.log"; exit 1; }
cmake --build "$tmp/example" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; exit 1; }
export LD_LIBRARY_PATH="$tmp/prefix/lib:${LD_LIBRARY_PATH:-}"
(cd "$tmp/example" && ctest --output-on-failure)
plugin=$(find "$tmp/example" -name 'libvendor_conformance_plugin.so' | head -n1)
test -n "$plugin" || { echo "example plugin not built"; exit 1; }
"$tmp/prefix/bin/lmcache-conform" --plugin "$plugin" --quiet \
  --json "$tmp/report.json" --junit "$tmp/report.xml"
test -s "$tmp/report.json" || { echo "no JSON report"; exit 1; }
test -s "$tmp/report.xml" || { echo "no JUnit report"; exit 1; }
test -f "$tmp/prefix/share/lmcache/conformance/mustpass.txt" || { echo "mustpass.txt not installed"; exit 1; }
test ! -e "$tmp/prefix/include/lmcache/conformance/serde_conformance.cc" \
  || { echo "sources installed"; exit 1; }
# The native connector example: one LMCACHE_CONFORMANCE_CONNECTOR line, the bridge headers and
# lmcache::bridge from the installed tree.
cmake -S "$src/conformance/examples/connector" -B "$tmp/connector" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$tmp/prefix" >"$tmp/connector_configure.log" 2>&1 \
  || { cat "$tmp/connector_configure.log"; exit 1; }
cmake --build "$tmp/connector" >"$tmp/connector_build.log" 2>&1 \
  || { cat "$tmp/connector_build.log"; exit 1; }
connector=$(find "$tmp/connector" -name 'libvendor_connector_plugin.so' | head -n1)
test -n "$connector" || { echo "example connector plugin not built"; exit 1; }
rc=0
"$tmp/prefix/bin/lmcache-conform" --connector-plugin "$connector" --quiet \
  --json "$tmp/connector.json" >"$tmp/connector_run.log" 2>&1 || rc=$?
test "$rc" -eq 0 || { cat "$tmp/connector_run.log"; echo "connector example: exit $rc"; exit 1; }
grep -q '"MapConnector_fp8"' "$tmp/connector.json" \
  || { echo "connector example: no MapConnector_fp8 in the report"; exit 1; }
# --python from the installed tree (builds with Python, docs/python.md): the installed runner finds
# the installed package (share/lmcache/python, before the source tree); an example copied out of
# the source tree passes a few properties.
if [[ -f "$tmp/prefix/share/lmcache/python/lmcache_conformance/__init__.py" ]]; then
  cp "$src/conformance/examples/python/checksum_serde.py" "$tmp/my_checksum.py"
  rc=0
  (cd "$tmp" && "$tmp/prefix/bin/lmcache-conform" --python my_checksum.py:make --depth quick \
    --quiet --filter 'py_my_checksum_make.RoundTrip:py_my_checksum_make.MatchesReference' \
    --json "$tmp/python.json" >"$tmp/python_run.log" 2>&1) || rc=$?
  test "$rc" -eq 0 || { cat "$tmp/python_run.log"; echo "python example: exit $rc"; exit 1; }
  grep -q '"py_my_checksum_make"' "$tmp/python.json" \
    || { echo "python example: no py_my_checksum_make in the report"; exit 1; }
fi
echo "installed conformance kit works with find_package(lmcache_conformance)"
