#!/usr/bin/env bash
# lmcache_serde_cli_test.sh <path to lmcache-serde>
#
# Round-trips exact values through the CLI and checks exit code 2 on bad input.
set -u
BIN=${1:?usage: $0 <lmcache-serde>}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
FAILED=0

fail() { echo "FAIL: $*" >&2; FAILED=1; }
hex() { od -An -v -tx1 "$1" | tr -d ' \n'; }

# expect_rc <rc> <description> <command...>: runs with stdin from $IN, stderr kept.
expect_rc() {
  local want=$1 what=$2; shift 2
  "$@" <"$IN" >"$TMP/out" 2>"$TMP/err"
  local rc=$?
  if [[ $rc -ne $want ]]; then
    fail "$what: exit $rc, want $want (stderr: $(cat "$TMP/err"))"
  elif [[ $want -ne 0 && ! -s $TMP/err ]]; then
    fail "$what: exit $want but nothing on stderr"
  fi
}

# bfloat16 little-endian: 0, 0.5, 1, 1.5, 2, 3, 4, -1 (exact in both fp8 formats).
printf '\x00\x00\x00\x3f\x80\x3f\xc0\x3f\x00\x40\x40\x40\x80\x40\x80\xbf' >"$TMP/bf16.raw"
# The same values as float32.
printf '\x00\x00\x00\x00\x00\x00\x00\x3f\x00\x00\x80\x3f\x00\x00\xc0\x3f\x00\x00\x00\x40\x00\x00\x40\x40\x00\x00\x80\x40\x00\x00\x80\xbf' >"$TMP/f32.raw"

E4M3='{"type":"fp8"}'
E5M2='{"type":"fp8","fp8_dtype":"float8_e5m2","max_workers":2}'

# list names fp8.
IN=/dev/null
expect_rc 0 "list" "$BIN" list
grep -qx fp8 "$TMP/out" || fail "list does not name fp8: $(cat "$TMP/out")"

# encode bf16 -> e4m3fn: one byte per element, PyTorch's codes.
IN=$TMP/bf16.raw
expect_rc 0 "encode e4m3fn" "$BIN" encode --config "$E4M3" --dtype bfloat16
cp "$TMP/out" "$TMP/e4m3.bin"
[[ $(hex "$TMP/e4m3.bin") == 0030383c404448b8 ]] || fail "e4m3fn codes: $(hex "$TMP/e4m3.bin")"

# decode back to bfloat16 and float32: exact.
IN=$TMP/e4m3.bin
expect_rc 0 "decode e4m3fn -> bfloat16" "$BIN" decode --config "$E4M3" --dtype bfloat16
cmp -s "$TMP/out" "$TMP/bf16.raw" || fail "bf16 round trip differs: $(hex "$TMP/out")"
expect_rc 0 "decode e4m3fn -> float32" "$BIN" decode --config "$E4M3" --dtype float32
cmp -s "$TMP/out" "$TMP/f32.raw" || fail "f32 decode differs: $(hex "$TMP/out")"
expect_rc 0 "decode --count 3" "$BIN" decode --config "$E4M3" --dtype bfloat16 --count 3
[[ $(hex "$TMP/out") == 0000003f803f ]] || fail "--count 3 output: $(hex "$TMP/out")"

# e5m2 from float32, and back.
IN=$TMP/f32.raw
expect_rc 0 "encode e5m2" "$BIN" encode --config "$E5M2" --dtype float32
cp "$TMP/out" "$TMP/e5m2.bin"
[[ $(hex "$TMP/e5m2.bin") == 00383c3e404244bc ]] || fail "e5m2 codes: $(hex "$TMP/e5m2.bin")"
IN=$TMP/e5m2.bin
expect_rc 0 "decode e5m2" "$BIN" decode --config "$E5M2" --dtype float32
cmp -s "$TMP/out" "$TMP/f32.raw" || fail "e5m2 round trip differs: $(hex "$TMP/out")"

# Empty input is zero elements.
IN=/dev/null
expect_rc 0 "encode empty" "$BIN" encode --config "$E4M3" --dtype float16
[[ -s $TMP/out ]] && fail "empty input gave output"

# Bad input: exit 2 with a message.
printf '\x00\x01\x02' >"$TMP/three.raw"
IN=$TMP/three.raw
expect_rc 2 "3 bytes of bfloat16" "$BIN" encode --config "$E4M3" --dtype bfloat16
grep -q "3 bytes" "$TMP/err" || fail "size message: $(cat "$TMP/err")"
IN=$TMP/bf16.raw
expect_rc 2 "unknown dtype" "$BIN" encode --config "$E4M3" --dtype float64
expect_rc 2 "unsupported dtype for fp8" "$BIN" encode --config "$E4M3" --dtype uint8
expect_rc 2 "bad JSON" "$BIN" encode --config '{"type":' --dtype bfloat16
expect_rc 2 "unknown serde" "$BIN" encode --config '{"type":"nope"}' --dtype bfloat16
grep -q "Unknown serde type 'nope'" "$TMP/err" || fail "unknown serde message: $(cat "$TMP/err")"
expect_rc 2 "unknown fp8 key" "$BIN" encode --config '{"type":"fp8","fp8_dtyp":"x"}' --dtype bfloat16
expect_rc 2 "missing --config" "$BIN" encode --dtype bfloat16
expect_rc 2 "odd hex chunk hash" "$BIN" encode --config "$E4M3" --dtype bfloat16 --chunk-hash abc
grep -q "chunk-hash 'abc' is not hex" "$TMP/err" || fail "bad hex message: $(cat "$TMP/err")"
expect_rc 2 "non-hex chunk hash" "$BIN" encode --config "$E4M3" --dtype bfloat16 --chunk-hash 0g
expect_rc 2 "no subcommand" "$BIN"
IN=$TMP/e4m3.bin
expect_rc 2 "decode --count too large" "$BIN" decode --config "$E4M3" --dtype float32 --count 9
grep -q "source buffer too small" "$TMP/err" || fail "short source message: $(cat "$TMP/err")"

if [[ $FAILED -ne 0 ]]; then exit 1; fi
echo "lmcache-serde CLI: all checks passed"
