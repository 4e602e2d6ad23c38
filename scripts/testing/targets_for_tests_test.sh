#!/usr/bin/env bash
# targets_for_tests_test.sh <build-dir> <python3>: targets_for_tests.py names what a test runs
# or loads, even before it is built; what the tree installs for a test that installs it; nothing
# for a test that runs no built file; and refuses a name that is no test of the tree. Checked on
# a scratch tree (a CTestTestfile.cmake and a build.ninja written here, nothing built) and on
# <build-dir>.
set -euo pipefail
build=$1 python=$2
script="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/targets_for_tests.py"
fail() { echo "FAIL: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The scratch tree: three outputs, none built; t1 runs prog and loads plugin.so, t2 runs only
# what is installed on the host, t3 installs the tree (which installs lib.so).
cat >"$tmp/build.ninja" <<NINJA
rule touch
  command = touch \$out
build prog: touch
build plugin.so: touch
build lib.so: touch
NINJA
cat >"$tmp/CTestTestfile.cmake" <<CTEST
add_test([=[t1]=] "$tmp/prog" "--flag")
set_tests_properties([=[t1]=] PROPERTIES  ENVIRONMENT "A=1;PLUGIN=$tmp/plugin.so" WORKING_DIRECTORY "$tmp" _BACKTRACE_TRIPLES "$tmp/CMakeLists.txt;1;add_test")
add_test([=[t2]=] "bash" "-c" "true")
set_tests_properties([=[t2]=] PROPERTIES  WORKING_DIRECTORY "$tmp")
add_test([=[t3]=] "cmake" "--install" "$tmp")
CTEST
echo "file(INSTALL DESTINATION \"\${CMAKE_INSTALL_PREFIX}/lib\" TYPE SHARED_LIBRARY FILES \"$tmp/lib.so\")" \
  >"$tmp/cmake_install.cmake"

out=$("$python" "$script" "$tmp" <<<"t1" | paste -sd' ')
[[ "$out" == "plugin.so prog" ]] || fail "t1 runs prog and loads plugin.so, got: '$out'"
out=$("$python" "$script" "$tmp" <<<"t2")
[[ -z "$out" ]] || fail "t2 runs no built file, got: '$out'"
out=$("$python" "$script" "$tmp" <<<"t3")
[[ "$out" == "lib.so" ]] || fail "t3 installs the tree (lib.so), got: '$out'"
if err=$("$python" "$script" "$tmp" 2>&1 <<<"no_such_test"); then
  fail "an unknown test name was accepted"
fi
grep -q 'no such test.*no_such_test' <<<"$err" || fail "unclear message for an unknown test: $err"

# The real tree: the packaging test installs lmcache-serde and lmcache::core.
out=$("$python" "$script" "$build" <<<"install_find_package")
grep -qx 'reference/tools/lmcache-serde' <<<"$out" ||
  fail "the packaging test does not build the installed lmcache-serde: $out"
grep -q 'liblmcache_core\.' <<<"$out" || fail "the packaging test does not build lmcache::core: $out"
echo "targets_for_tests.py: ok"
