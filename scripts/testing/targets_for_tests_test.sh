#!/usr/bin/env bash
# targets_for_tests_test.sh <build-dir> <python3>: targets_for_tests.py names what a test runs
# (the packaging test: what the tree installs, lmcache-serde among it), nothing for a test that
# runs no built file, and refuses a name that is no test of the tree.
set -euo pipefail
build=$1 python=$2
script="$(dirname "${BASH_SOURCE[0]}")/targets_for_tests.py"
fail() { echo "FAIL: $*" >&2; exit 1; }

out=$("$python" "$script" "$build" <<<"install_find_package")
grep -qx 'reference/tools/lmcache-serde' <<<"$out" ||
  fail "the packaging test does not build the installed lmcache-serde: $out"
grep -q 'liblmcache_core\.' <<<"$out" || fail "the packaging test does not build lmcache::core: $out"

out=$("$python" "$script" "$build" <<<"component_graph")
[[ -z "$out" ]] || fail "component_graph runs no built file, yet got: $out"

if err=$("$python" "$script" "$build" <<<"no_such_test" 2>&1); then
  fail "an unknown test name was accepted"
fi
grep -q 'no such test.*no_such_test' <<<"$err" || fail "unclear message for an unknown test: $err"
echo "targets_for_tests.py: ok"
