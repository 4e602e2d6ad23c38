#!/usr/bin/env bash
# conform_cli_test.sh <path to lmcache-conform>
#
# lmcache-conform's command line: options out of range, malformed RapidCheck parameters, a
# --filter that selects no property and unusable report paths are usage errors (exit 2, a
# message naming the option, no property run); reports are written only where a regular file or
# nothing is; a report that cannot be written fails the run.
set -u
BIN=${1:?usage: $0 <lmcache-conform>}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/testing/cli_checks.sh"
export LMCACHE_CONFORMANCE_DEPTH=quick
unset RC_PARAMS

# expect <rc> <stderr fragment or ""> <args...>
expect() {
  local want=$1 fragment=$2; shift 2
  run_checked "$want" "$fragment" "$BIN" "$@"
  if [[ $want -eq 2 && $* != *"/proc/"* ]] && grep -q "CONFORMANT" "$TMP/out"; then
    fail "$*: a usage error, yet a verdict was printed: $(tail -n 1 "$TMP/out")"
  fi
}

ONE=(--reference --filter 'fp8_e4m3fn.EstimateIsUpperBound')

# A filter that selects nothing is an error, not a CONFORMANT run of zero properties.
expect 2 "no property matches --filter 'fp8*.NoSuchProperty'" --reference --filter 'fp8*.NoSuchProperty'

# RapidCheck parameters are checked before anything runs.
expect 2 "--rc-params: unknown key 'max_sucess' (known keys: seed, max_success" \
  "${ONE[@]}" --rc-params 'max_sucess=5'
expect 2 "--rc-params: 'seed=-1': seed must be a decimal integer" "${ONE[@]}" --rc-params 'seed=-1'
expect 2 "'seed=1180591620717411303424'" "${ONE[@]}" --rc-params 'seed=1180591620717411303424'
expect 2 "'max_success=x': max_success must be a decimal integer in [0, 2147483647]" \
  "${ONE[@]}" --rc-params 'max_success=x'
expect 2 "'noshrink=yes': noshrink must be 0 or 1" "${ONE[@]}" --rc-params 'noshrink=yes'
expect 2 "unterminated quote" "${ONE[@]}" --rc-params "seed='12"
RC_PARAMS='max_size=-3' expect 2 "\$RC_PARAMS: 'max_size=-3'" "${ONE[@]}"

# Numbers out of range.
expect 2 "--jobs: '0' is not an integer in [1, 256]" "${ONE[@]}" --jobs 0
expect 2 "--jobs: '-1'" "${ONE[@]}" -j -1
expect 2 "--timeout: '-5' is not a number in" "${ONE[@]}" --timeout -5
expect 2 "--timeout: 'nan'" "${ONE[@]}" --timeout nan

# Report paths: a regular file or nothing, in an existing directory; refused before the run.
expect 2 "'/dev/null' is a character device" "${ONE[@]}" --json /dev/null
[[ -c /dev/null ]] || fail "/dev/null is no longer a character device"
expect 2 "does not exist" "${ONE[@]}" --junit "$TMP/missing/report.xml"
mkdir "$TMP/dir"
expect 2 "is a directory" "${ONE[@]}" --json "$TMP/dir"
mkfifo "$TMP/fifo"
expect 2 "is a FIFO" "${ONE[@]}" --junit "$TMP/fifo"
echo keep >"$TMP/target"
ln -s "$TMP/target" "$TMP/link"
expect 2 "is a symbolic link" "${ONE[@]}" --json "$TMP/link"
[[ $(cat "$TMP/target") == keep ]] || fail "the symbolic link's target changed"
echo file >"$TMP/file"
expect 2 "--keep-logs '$TMP/file': cannot make it a directory" "${ONE[@]}" --keep-logs "$TMP/file"

# A report that cannot be written (/proc takes no new file, whoever asks) fails the run.
expect 2 "--json: cannot write the report" "${ONE[@]}" --json /proc/lmcache-conform-cli-test.json

# One property, both reports over regular files.
echo old >"$TMP/report.json"
expect 0 "" "${ONE[@]}" --json "$TMP/report.json" --junit "$TMP/report.xml" --rc-params 'seed=7 max_success=5'
grep -q "CONFORMANT" "$TMP/out" || fail "no verdict: $(cat "$TMP/out")"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["summary"]["Pass"] == 1, d' \
  "$TMP/report.json" || fail "the JSON report is not the run's"
grep -q '<testsuites name="lmcache-conform" tests="1"' "$TMP/report.xml" || fail "JUnit report: $(head -c 300 "$TMP/report.xml")"
[[ $(ls "$TMP" | grep -c '\.tmp\.') -eq 0 ]] || fail "a temporary file was left: $(ls "$TMP")"

finish
echo "lmcache-conform CLI: all checks passed"
