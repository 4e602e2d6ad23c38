#!/usr/bin/env bash
# python_kit_test.sh <lmcache-conform> <source dir> <python3>
#
# lmcache-conform --python (docs/python.md): the Python examples (fp8 e4m3fn / e5m2, checksum, an
# in-memory L2 adapter) pass every property, and the adapter's own test (memory_adapter_test.py)
# passes; every Python mutant (conformance/selftest/python_mutants.py, one bug each) fails at
# least one of the properties whose contract it breaks; a spec that cannot be loaded is a
# usage error (exit 2) naming what went wrong, with the Python traceback's last frames; a crash and
# a hang inside a Python implementation are that property's Fail.
set -u
BIN=${1:?usage: $0 <lmcache-conform> <source dir> <python3>}
SRC=${2:?}
PY=${3:?}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0
unset RC_PARAMS
DEPTH=${LMCACHE_CONFORMANCE_DEPTH:-quick}
EX=$SRC/conformance/examples/python
MUT=$SRC/conformance/selftest/python_mutants.py
fail() { echo "FAIL: $*" >&2; FAILED=1; }

# 0. The example adapter's own test: store results survive pops racing its worker.
"$PY" "$SRC/conformance/examples/python/memory_adapter_test.py" >"$TMP/adapter_test.out" 2>&1 ||
  fail "memory_adapter_test.py: $(tail -c 3000 "$TMP/adapter_test.out")"

# 1. The examples: every property Pass or NotSupported.
"$BIN" --depth "$DEPTH" -q --json "$TMP/examples.json" --rc-params "seed=7" \
  --python "$EX/fp8_serde.py:make_e4m3fn" --python "$EX/fp8_serde.py:make_e5m2" \
  --python "$EX/checksum_serde.py:make" --python "$EX/memory_adapter.py:make" \
  >"$TMP/examples.out" 2>&1
rc=$?
[[ $rc -eq 0 ]] || fail "examples: exit $rc: $(grep -A3 'FAIL\|ERROR' "$TMP/examples.out" | head -c 3000)"
"$PY" - "$TMP/examples.json" <<'PYEOF' || FAILED=1
import json, sys
report = json.load(open(sys.argv[1]))
names = {i["name"]: i for i in report["implementations"]}
want = ["py_fp8_serde_make_e4m3fn", "py_fp8_serde_make_e5m2", "py_checksum_serde_make"]
for name in want + [n + "_async" for n in want] + ["py_memory_adapter_make"]:
    impl = names.get(name)
    if impl is None:
        sys.exit(f"FAIL: examples: {name} not in the report ({sorted(names)})")
    passed = [p for p in impl["properties"] if p["status"] == "Pass"]
    bad = [p["property"] for p in impl["properties"] if p["status"] not in ("Pass", "NotSupported")]
    if bad or len(passed) < 10:
        sys.exit(f"FAIL: examples: {name}: {len(passed)} Pass, not passing: {bad}")
# MatchesReference ran (the frames are the reference's, byte for byte) for each serde.
for name in want:
    mr = [p for p in names[name]["properties"] if p["property"] == "MatchesReference"]
    if not mr or mr[0]["status"] != "Pass":
        sys.exit(f"FAIL: examples: {name}.MatchesReference did not pass: {mr}")
PYEOF

# 2. Every mutant fails one of the properties whose contract it breaks (as the C++ mutation suite runs
# each mutant under its own property). Only those run: each property is a child process that
# imports torch (~1.5 s of CPU), and the whole suite per mutant took ~170 s for the ten.
check_mutant() {  # <factory> <implementation that must fail> <property>...
  local factory=$1 target=$2 filter="" p
  shift 2
  for p in "$@"; do filter+="${filter:+:}$target.$p"; done
  "$BIN" --depth "$DEPTH" -q --json "$TMP/$factory.json" --rc-params "seed=11" \
    --filter "$filter" --python "$MUT:$factory" >"$TMP/$factory.out" 2>&1
  local rc=$?
  [[ $rc -eq 1 ]] || { fail "mutant $factory: exit $rc, want 1: $(tail -n 5 "$TMP/$factory.out")"; return; }
  "$PY" - "$TMP/$factory.json" "$target" <<'PYEOF' || fail "mutant $factory: $target has no Fail"
import json, sys
report = json.load(open(sys.argv[1]))
impl = [i for i in report["implementations"] if i["name"] == sys.argv[2]]
sys.exit(0 if impl and any(p["status"] == "Fail" for p in impl[0]["properties"]) else 1)
PYEOF
}
check_mutant fp8_truncating py_python_mutants_fp8_truncating RoundTrip MatchesReference
check_mutant fp8_groups_at_zero py_python_mutants_fp8_groups_at_zero RoundTrip MatchesReference
check_mutant checksum_no_fingerprint py_python_mutants_checksum_no_fingerprint \
  IntegrityOtherChunkRejected MatchesReference
check_mutant checksum_short_hash py_checksum_short_hash IntegrityBitFlipsDetected MatchesReference
check_mutant async_result_twice py_python_mutants_async_result_twice OneShotQueries
check_mutant async_not_narrowing py_python_mutants_async_not_narrowing \
  SerializeThenDeserialize MatchesReference
check_mutant async_one_fd py_python_mutants_async_one_fd DistinctEventFds
check_mutant adapter_lookup_without_lock py_python_mutants_adapter_lookup_without_lock LookupLocks
check_mutant adapter_stores_popped_twice py_python_mutants_adapter_stores_popped_twice \
  OneShotResults
check_mutant adapter_usage_of_one_salt py_python_mutants_adapter_usage_of_one_salt \
  UsageMatchesStoredBytes

# 3. Specs that cannot be loaded: exit 2 (a source that cannot be loaded), the reason named.
cat >"$TMP/bad.py" <<'PYEOF'
def not_an_implementation():
    return 42

def raises():
    return helper()

def helper():
    raise KeyError("no such serde config")
PYEOF
expect2() {  # <stderr fragment> <spec>
  "$BIN" --depth quick -q --python "$2" >"$TMP/out" 2>&1
  local rc=$?
  [[ $rc -eq 2 ]] || fail "--python $2: exit $rc, want 2"
  grep -qF -- "$1" "$TMP/out" || fail "--python $2: the output lacks '$1': $(head -c 800 "$TMP/out")"
  grep -q "over 0 implementation" "$TMP/out" || fail "--python $2: a property ran"
}
expect2 "no Python file" "$TMP/missing.py:make"
expect2 "has no attribute 'nope'" "$TMP/bad.py:nope"
expect2 "expected a (Serializer, Deserializer) pair" "$TMP/bad.py:not_an_implementation"
expect2 "in helper" "$TMP/bad.py:raises"
expect2 "expected MODULE:FACTORY" "no_colon_here"

# 4. A crash or a hang inside a Python implementation is that property's Fail, as for a plugin,
# though its process was forked from the runner's fork server (docs/python.md, "Process").
cat >"$TMP/faulty.py" <<PYEOF
import os, signal, sys, time
sys.path.insert(0, "$EX")
import checksum_serde as base

class Crashing(base.ChecksumSerializer):
    def serialize(self, src, dst, key):
        os.kill(os.getpid(), signal.SIGSEGV)

class Hanging(base.ChecksumSerializer):
    def serialize(self, src, dst, key):
        time.sleep(3600)

def crashes():
    return Crashing(), base.ChecksumDeserializer()

def hangs():
    return Hanging(), base.ChecksumDeserializer()
PYEOF
"$BIN" --depth quick -q --timeout 20 --json "$TMP/faulty.json" \
  --filter 'py_faulty_crashes.RoundTrip:py_faulty_hangs.RoundTrip' \
  --python "$TMP/faulty.py:crashes" --python "$TMP/faulty.py:hangs" >"$TMP/faulty.out" 2>&1
rc=$?
[[ $rc -eq 1 ]] || fail "crash and hang: exit $rc, want 1: $(tail -n 5 "$TMP/faulty.out")"
"$PY" - "$TMP/faulty.json" <<'PYEOF' || FAILED=1
import json, sys
report = json.load(open(sys.argv[1]))
want = {"py_faulty_crashes": "crashed with signal SIGSEGV", "py_faulty_hangs": "hang (timeout after 20 s)"}
for impl in report["implementations"]:
    if impl["name"] not in want:
        continue
    props = impl["properties"]
    if len(props) != 1 or props[0]["status"] != "Fail" or want[impl["name"]] not in props[0]["message"]:
        sys.exit(f"FAIL: {impl['name']}: want one Fail saying '{want[impl['name']]}', got {props}")
    del want[impl["name"]]
if want:
    sys.exit(f"FAIL: crash and hang: not in the report: {sorted(want)}")
PYEOF

exit $FAILED
