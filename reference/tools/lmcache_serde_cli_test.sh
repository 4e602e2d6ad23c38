#!/usr/bin/env bash
# lmcache_serde_cli_test.sh <path to lmcache-serde>
#
# Round-trips exact values through the CLI, checks that decode takes the element count from a
# frame's length (checksum, aesgcm, chain), and checks exit code 2 with a message naming the
# option on bad input.
set -u
BIN=${1:?usage: $0 <lmcache-serde>}
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/testing/cli_checks.sh"

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

# encode_codes <what> <config> <dtype> <raw input> <codes, hex> <copy to>: encodes the input and
# checks PyTorch's codes, one byte per element.
encode_codes() {
  local what=$1 config=$2 dtype=$3 codes=$5 copy=$6
  IN=$4
  expect_rc 0 "encode $what" "$BIN" encode --config "$config" --dtype "$dtype"
  cp "$TMP/out" "$copy"
  [[ $(hex "$copy") == "$codes" ]] || fail "$what codes: $(hex "$copy")"
}
# decodes_to <what> <config> <dtype> <codes file> <raw expected>: decodes exactly.
decodes_to() {
  IN=$4
  expect_rc 0 "decode $1" "$BIN" decode --config "$2" --dtype "$3"
  cmp -s "$TMP/out" "$5" || fail "$1 differs: $(hex "$TMP/out")"
}

# bf16 -> e4m3fn, back to bfloat16 and float32 exactly.
encode_codes e4m3fn "$E4M3" bfloat16 "$TMP/bf16.raw" 0030383c404448b8 "$TMP/e4m3.bin"
decodes_to "e4m3fn -> bfloat16" "$E4M3" bfloat16 "$TMP/e4m3.bin" "$TMP/bf16.raw"
decodes_to "e4m3fn -> float32" "$E4M3" float32 "$TMP/e4m3.bin" "$TMP/f32.raw"
expect_rc 0 "decode --count 8 (agrees)" "$BIN" decode --config "$E4M3" --dtype bfloat16 --count 8
cmp -s "$TMP/out" "$TMP/bf16.raw" || fail "--count 8 output: $(hex "$TMP/out")"
# A --count that disagrees with the frame is the option's fault, said so (not a frame error).
expect_rc 2 "decode --count 3 of 8 codes" "$BIN" decode --config "$E4M3" --dtype bfloat16 --count 3
grep -q -- "--count 3 disagrees with the input: a frame of 3 bfloat16 elements is 3 bytes, the input has 8" "$TMP/err" ||
  fail "--count 3 message: $(cat "$TMP/err")"

# e5m2 from float32, and back.
encode_codes e5m2 "$E5M2" float32 "$TMP/f32.raw" 00383c3e404244bc "$TMP/e5m2.bin"
decodes_to "e5m2 -> float32" "$E5M2" float32 "$TMP/e5m2.bin" "$TMP/f32.raw"

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
grep -q -- "--count 9 disagrees with the input" "$TMP/err" || fail "--count 9 message: $(cat "$TMP/err")"
# A count past any input is refused before anything is allocated, naming --count.
expect_rc 2 "decode --count 99999999999" "$BIN" decode --config "$E4M3" --dtype float32 --count 99999999999
grep -q -- "--count 99999999999 disagrees" "$TMP/err" || fail "huge --count message: $(cat "$TMP/err")"
grep -q "bad_alloc" "$TMP/err" && fail "raw exception text: $(cat "$TMP/err")"
# Out-of-range options: exit 2 naming the option and its range.
expect_rc 2 "decode --count -1" "$BIN" decode --config "$E4M3" --dtype float32 --count -1
grep -q -- "--count: '-1' is not an integer in \[0, 1099511627776\]" "$TMP/err" ||
  fail "--count -1 message: $(cat "$TMP/err")"
expect_rc 2 "decode --count 2^70" "$BIN" decode --config "$E4M3" --dtype float32 --count 1180591620717411303424
expect_rc 2 "--timeout 0" "$BIN" decode --config "$E4M3" --dtype float32 --timeout 0
grep -q -- "--timeout: '0' is not an integer in \[1, 86400\]" "$TMP/err" ||
  fail "--timeout 0 message: $(cat "$TMP/err")"

# Framed serdes: decode takes the element count from the frame's length.
head -c 4096 /dev/urandom >"$TMP/payload.bin"
head -c 32 /dev/urandom >"$TMP/master.key"
CHECKSUM='{"type":"checksum"}'
AESGCM="{\"type\":\"aesgcm\",\"master_key_path\":\"$TMP/master.key\"}"
CHAIN='{"type":"chain","stages":[{"type":"fp8"},{"type":"checksum"}]}'
IN=$TMP/payload.bin
expect_rc 0 "checksum encode" "$BIN" encode --config "$CHECKSUM" --dtype uint8 --chunk-hash 0a0b
cp "$TMP/out" "$TMP/checksum.frame"
[[ $(stat -c %s "$TMP/checksum.frame") -eq 4113 ]] || fail "checksum frame of 4096 bytes is not 4113 bytes"
IN=$TMP/checksum.frame
expect_rc 0 "checksum decode, no --count" "$BIN" decode --config "$CHECKSUM" --dtype uint8 --chunk-hash 0a0b
cmp -s "$TMP/out" "$TMP/payload.bin" || fail "checksum round trip differs"
expect_rc 0 "checksum decode as float32, no --count" "$BIN" decode --config "$CHECKSUM" --dtype float32 --chunk-hash 0a0b
cmp -s "$TMP/out" "$TMP/payload.bin" || fail "checksum float32 round trip differs"
expect_rc 2 "checksum decode --count 4113" "$BIN" decode --config "$CHECKSUM" --dtype uint8 --chunk-hash 0a0b --count 4113
grep -q -- "--count 4113 disagrees with the input: a frame of 4113 uint8 elements is 4130 bytes, the input has 4113 (a frame of 4096 uint8 elements)" "$TMP/err" ||
  fail "checksum --count message: $(cat "$TMP/err")"
head -c 4112 "$TMP/checksum.frame" >"$TMP/short.frame"
IN=$TMP/short.frame
expect_rc 2 "checksum decode of a frame as float32 one byte short" "$BIN" decode --config "$CHECKSUM" --dtype float32 --chunk-hash 0a0b
grep -q "the input has 4112 bytes, which is no whole frame: a frame of c float32 elements is 4 x c + 17 bytes" "$TMP/err" ||
  fail "short frame message: $(cat "$TMP/err")"
head -c 5 "$TMP/checksum.frame" >"$TMP/tiny.frame"
IN=$TMP/tiny.frame
expect_rc 2 "checksum decode of 5 bytes" "$BIN" decode --config "$CHECKSUM" --dtype uint8
grep -q "at least 17" "$TMP/err" || fail "tiny frame message: $(cat "$TMP/err")"

IN=$TMP/payload.bin
expect_rc 0 "aesgcm encode" "$BIN" encode --config "$AESGCM" --dtype uint8 --cache-salt tenant-a
cp "$TMP/out" "$TMP/aesgcm.frame"
[[ $(stat -c %s "$TMP/aesgcm.frame") -eq 4125 ]] || fail "aesgcm frame of 4096 bytes is not 4125 bytes"
IN=$TMP/aesgcm.frame
expect_rc 0 "aesgcm decode, no --count" "$BIN" decode --config "$AESGCM" --dtype uint8 --cache-salt tenant-a
cmp -s "$TMP/out" "$TMP/payload.bin" || fail "aesgcm round trip differs"
expect_rc 0 "aesgcm decode, --count 4096" "$BIN" decode --config "$AESGCM" --dtype uint8 --cache-salt tenant-a --count 4096
# A master key path that is no small regular file: exit 2 naming master_key_path.
for bad in "$TMP" /dev/zero; do
  expect_rc 2 "aesgcm master_key_path $bad" "$BIN" decode --dtype uint8 \
    --config "{\"type\":\"aesgcm\",\"master_key_path\":\"$bad\"}"
  grep -q "'master_key_path' '$bad' is a" "$TMP/err" || fail "master_key_path $bad message: $(cat "$TMP/err")"
done

IN=$TMP/bf16.raw
expect_rc 0 "chain encode" "$BIN" encode --config "$CHAIN" --dtype bfloat16
cp "$TMP/out" "$TMP/chain.frame"
[[ $(stat -c %s "$TMP/chain.frame") -eq 25 ]] || fail "chain frame of 8 elements is not 8 + 17 bytes"
IN=$TMP/chain.frame
expect_rc 0 "chain decode, no --count" "$BIN" decode --config "$CHAIN" --dtype bfloat16
cmp -s "$TMP/out" "$TMP/bf16.raw" || fail "chain round trip differs: $(hex "$TMP/out")"

# lmcr: LMCache's frozen raw-Deflate fixture ("hello") verifies; damaged, truncated and
# oversized records exit 2 naming the check; an lmcr round trip needs --count (compressed).
LMCR_HELLO=4c4d4352010101004400000057000000000000000500000000000000010000005c9845f7f13ce63c000000005000000000000000070000000500000086a6103600000000000000000000000000000000cb48cdc9c90700
printf "$(sed 's/../\\x&/g' <<<"$LMCR_HELLO")" >"$TMP/hello.lmcr"
[[ $(hex "$TMP/hello.lmcr") == "$LMCR_HELLO" ]] || fail "could not write the LMCR fixture"
IN=$TMP/hello.lmcr
expect_rc 0 "lmcr verify of LMCache's fixture" "$BIN" lmcr verify
grep -q "uncompressed size: 5 bytes" "$TMP/out" || fail "lmcr verify output: $(cat "$TMP/out")"
expect_rc 2 "lmcr verify --max-bytes 4" "$BIN" lmcr verify --max-bytes 4
grep -q "more than --max-bytes 4" "$TMP/err" || fail "max-bytes message: $(cat "$TMP/err")"
head -c 60 "$TMP/hello.lmcr" >"$TMP/cut.lmcr"
IN=$TMP/cut.lmcr
expect_rc 2 "lmcr verify of a truncated record" "$BIN" lmcr verify
grep -q "lmcr verify: LMCR record: truncated" "$TMP/err" || fail "truncated message: $(cat "$TMP/err")"
{ head -c 86 "$TMP/hello.lmcr"; printf '\x01'; } >"$TMP/flipped.lmcr"
IN=$TMP/flipped.lmcr
expect_rc 2 "lmcr verify of a damaged record" "$BIN" lmcr verify
grep -q "payload CRC mismatch" "$TMP/err" || fail "damaged message: $(cat "$TMP/err")"
IN=$TMP/payload.bin
expect_rc 0 "lmcr encode" "$BIN" encode --config '{"type":"lmcr","framing":"gzip"}' --dtype uint8
cp "$TMP/out" "$TMP/payload.lmcr"
IN=$TMP/payload.lmcr
expect_rc 0 "lmcr verify of an encoded record" "$BIN" lmcr verify
expect_rc 0 "lmcr decode --count 4096" "$BIN" decode --config '{"type":"lmcr"}' --dtype uint8 --count 4096
cmp -s "$TMP/out" "$TMP/payload.bin" || fail "lmcr round trip differs"

finish
echo "lmcache-serde CLI: all checks passed"
