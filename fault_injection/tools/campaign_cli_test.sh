#!/usr/bin/env bash
# campaign_cli_test.sh <path to lmcache-fault-campaign>
#
# lmcache-fault-campaign's command line: every numeric option out of its range, a malformed
# JSON option and an unusable --json path is a usage error (exit 2, a message naming the
# option, nothing run); the summary is written only where a regular file or nothing is; a
# summary that cannot be written fails the run.
set -u
BIN=${1:?usage: $0 <lmcache-fault-campaign>}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/testing/cli_checks.sh"

# expect <rc> <stderr fragment or ""> <args...>: runs the campaign, checks the exit status, that
# the fragment is on stderr, and that no raw exception text got out.
expect() {
  local want=$1 fragment=$2; shift 2
  run_checked "$want" "$fragment" "$BIN" "$@"
  if [[ $want -eq 2 && -z ${STARTS:-} ]] && grep -q "^seed=" "$TMP/out"; then
    fail "$*: a usage error, yet the campaign started"
  fi
}

SHORT=(--faults none --operations 40 --keys 16 --seed 3)

# --connector-plugin: a missing file, a file that is no plugin, and combinations that cannot hold.
expect 2 "--connector-plugin" --connector-plugin "$TMP/no-such-plugin.so" "${SHORT[@]}"
expect 2 "--connector-plugin: " --connector-plugin "$BIN" "${SHORT[@]}"
expect 2 "--connector-plugin and --inner" --connector-plugin "$BIN" --inner '{"type":"mock"}' "${SHORT[@]}"
expect 2 "a --connector-plugin's store is its own" --connector-plugin "$BIN" --storage-faults all "${SHORT[@]}"

# Numbers out of range: -1 would wrap to 2^64 - 1, 2^70 to a saturated value.
expect 2 "--operations: '-1' is not an integer in [0, 1000000000]" --operations -1
expect 2 "--keys: '1099511627776' is not an integer in [8, 65536]" --keys 1099511627776
expect 2 "--keys: '7' is not an integer in [8, 65536]" --keys 7
expect 2 "--seed: '1180591620717411303424' is not an integer in [0, 18446744073709551615]" \
  --seed 1180591620717411303424
expect 2 "--seed: '-1'" --seed -1
expect 2 "--seed: '0x10'" --seed 0x10
expect 2 "--task-timeout-ms: '-5' is not an integer in [1, 3600000]" --task-timeout-ms -5
expect 2 "--l1-capacity-mb: '0' is not an integer in [1, 65536]" --l1-capacity-mb 0
expect 2 "--max-batch: '0'" --max-batch 0
expect 2 "--max-in-flight: '5000'" --max-in-flight 5000
expect 2 "--epoch-ops: '0'" --epoch-ops 0
expect 2 "--rate: 'nan' is not a number in [0, 1]" --rate nan
expect 2 "--rate: '1.5'" --rate 1.5
expect 2 "--storage-rate: '-0.1'" --storage-rate -0.1
expect 2 "--seconds: '-1'" --seconds -1
expect 2 "--operations 0 (no limit) needs --seconds" --operations 0
expect 2 "--expect-strikes needs --storage-faults" --expect-strikes "${SHORT[@]}"
# An L1 too small for one wave's temps ended as miss_explained violations: it is refused (once
# the keys, whose sizes it depends on, are made).
STARTS=1 expect 2 "cannot hold the temps of one wave: 1024 tasks (--max-in-flight) x 1024 keys" \
  --l1-capacity-mb 1 --max-batch 1024 --max-in-flight 1024 "${SHORT[@]}"
expect 2 "--inner is not valid JSON" --inner '{"type":' "${SHORT[@]}"
expect 2 "--mutant: unknown mutant 'nope'" --mutant nope "${SHORT[@]}"
# The ranges are in --help.
expect 0 "" --help
grep -qF "in [8, 65536]" "$TMP/out" || fail "--help does not give the --keys range"

# --json: a regular file or nothing, in an existing directory; refused before anything runs.
expect 2 "does not exist" --json "$TMP/missing/summary.json" "${SHORT[@]}"
mkdir "$TMP/dir"
expect 2 "is a directory" --json "$TMP/dir" "${SHORT[@]}"
expect 2 "'/dev/null' is a character device" --json /dev/null "${SHORT[@]}"
[[ -c /dev/null ]] || fail "/dev/null is no longer a character device"
mkfifo "$TMP/fifo"
expect 2 "is a FIFO" --json "$TMP/fifo" "${SHORT[@]}"
[[ -p $TMP/fifo ]] || fail "the FIFO was replaced"
echo keep >"$TMP/target"
ln -s "$TMP/target" "$TMP/link"
expect 2 "is a symbolic link" --json "$TMP/link" "${SHORT[@]}"
[[ -L $TMP/link && $(cat "$TMP/target") == keep ]] || fail "the symbolic link or its target changed"

# A summary that cannot be written (/proc takes no new file, whoever asks) fails the run.
STARTS=1 expect 2 "--json: cannot write the summary" --json /proc/lmcache-campaign-cli-test.json \
  "${SHORT[@]}"

# A run writes its summary over a regular file, whole.
echo old >"$TMP/summary.json"
expect 0 "" --json "$TMP/summary.json" "${SHORT[@]}"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["seed"] == 3, d' \
  "$TMP/summary.json" || fail "the summary is not the run's JSON"
[[ $(ls "$TMP" | grep -c '\.tmp\.') -eq 0 ]] || fail "a temporary file was left: $(ls "$TMP")"

finish
echo "lmcache-fault-campaign CLI: all checks passed"
