#!/usr/bin/env bash
# adapter_config_test.sh <lmcache-conform> fs|resp: runs `lmcache-conform --adapter` against a
# live store made here (a temporary directory; or a private redis-server on a free 127.0.0.1
# port, no persistence, in a temporary directory), raw and under the fp8 serde (the adapter
# suite, and the wrapper suite over the live store); fs also under a chain of fp8 and checksum,
# and refusing a serde whose round trip the kit does not know. A key the run did not write is planted
# first and must be untouched afterwards (per-run key namespaces).
# Exit 77 (ctest: skipped) when redis-server is not installed.
set -euo pipefail
conform=$1 type=$2
tmp=$(mktemp -d)
server=
cleanup() {
  if [[ -n $server ]]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$tmp"
}
trap cleanup EXIT

case $type in
  fs)
    mkdir -p "$tmp/cache"
    printf 'not the kit'\''s' >"$tmp/cache/foreign.data"
    configs=("{\"type\":\"fs\",\"base_path\":\"$tmp/cache\",\"checksum\":\"crc32\"}"
             "{\"type\":\"fs\",\"base_path\":\"$tmp/cache\",\"serde\":{\"type\":\"fp8\"}}"
             "{\"type\":\"fs\",\"base_path\":\"$tmp/cache\",\"serde\":{\"type\":\"chain\",\"stages\":[{\"type\":\"fp8\"},{\"type\":\"checksum\"}]}}")
    check_foreign() { [[ $(cat "$tmp/cache/foreign.data") == "not the kit's" ]]; }
    ;;
  resp)
    command -v redis-server >/dev/null || { echo "redis-server is not installed: skipped"; exit 77; }
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$tmp" \
      >"$tmp/redis.log" 2>&1 &
    server=$!
    for _ in $(seq 100); do
      redis-cli -p "$port" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
    redis-cli -p "$port" set foreign "not the kit's" >/dev/null
    configs=("{\"type\":\"resp\",\"host\":\"127.0.0.1\",\"port\":$port,\"num_workers\":2}"
             "{\"type\":\"resp\",\"host\":\"127.0.0.1\",\"port\":$port,\"serde\":{\"type\":\"fp8\"}}")
    check_foreign() { [[ $(redis-cli -p "$port" get foreign) == "not the kit's" ]]; }
    ;;
  *) echo "usage: $0 <lmcache-conform> fs|resp" >&2; exit 2 ;;
esac

args=()
for c in "${configs[@]}"; do args+=(--adapter "$c"); done
"$conform" "${args[@]}" --quiet --json "$tmp/report.json"
grep -q '"config_'"$type"'_fp8"' "$tmp/report.json" || { echo "no fp8 column in the report"; exit 1; }
# The wrapper suite over the live store, with the config's serde.
python3 - "$tmp/report.json" "config_${type}_fp8_wrapper" <<'PY' || exit 1
import json, sys
doc, name = json.load(open(sys.argv[1])), sys.argv[2]
impls = [i for i in doc.get("implementations", []) if i.get("name") == name]
props = [p for i in impls for p in i.get("properties", [])]
wrapper = [p for p in props if p.get("suite") == "WrapperConformance"]
failed = [p["property"] for p in props if p.get("status") == "Fail"]
passed = [p for p in wrapper if p.get("status") == "Pass"]
if failed or not wrapper or len(passed) != len(wrapper):
    sys.exit(f"{name}: {len(passed)} of {len(wrapper)} wrapper properties passed; failed: {failed}")
print(f"{name}: {len(passed)} wrapper properties passed over the live store")
PY
if [[ $type == fs ]]; then
  # A chain of fp8 and lossless stages: the kit knows its round trip and the frame's size.
  grep -q '"config_fs_fp8_chain"' "$tmp/report.json" || { echo "no fp8 chain column"; exit 1; }
  # A serde whose round trip the kit does not know is refused, saying why (exit 2).
  rc=0
  "$conform" --adapter "{\"type\":\"fs\",\"base_path\":\"$tmp/cache\",\"serde\":{\"type\":\"checksum\"}}" \
    --list >"$tmp/refused.log" 2>&1 || rc=$?
  [[ $rc == 2 ]] && grep -q 'is not supported' "$tmp/refused.log" ||
    { echo "a checksum serde was not refused (exit $rc):"; cat "$tmp/refused.log"; exit 1; }
fi
check_foreign || { echo "a key the run did not write was changed"; exit 1; }
echo "lmcache-conform --adapter passes against a live $type store"
