#!/usr/bin/env python3
"""Writes the fuzz targets' seed corpora, fuzz/corpus/<target>/, from valid inputs.

Each seed is an input in its target's format (the top of fuzz/lmcache/fuzz/<target>_fuzzer.cc
and FuzzInput in fuzz_support.h): mostly valid frames, objects, replies and configs, computed
here from the formats' definitions (python3-xxhash, python3-cryptography, zlib), so that the
fuzzers start past the checks a random input never passes (a hash, a GCM tag, a crc32 trailer,
a JSON config the parsers accept), plus a few broken ones. The corpus is generated, never edited:
the ctest fuzz.seeds_up_to_date runs --check.

usage: make_seeds.py --write   regenerate fuzz/corpus/
       make_seeds.py --check   fail when fuzz/corpus/ is not what --write writes
"""
import json
import os
import struct
import sys
import zlib

import xxhash
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

FUZZ_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS_DIR = os.path.join(FUZZ_DIR, "corpus")
with open(os.path.join(FUZZ_DIR, "testdata", "aesgcm_test.key"), "rb") as f:
    MASTER_KEY = f.read()


def pattern(n, seed):
    return bytes((i * 37 + seed * 101 + 11) % 256 for i in range(n))


# --- serde_frame ---------------------------------------------------------------------------
# serde_frame_fuzzer.cc serdes(), in order.
SERDES = ["fp8_e4m3", "fp8_e5m2", "checksum", "aesgcm128", "aesgcm256", "aesgcm256_bound",
          "chain_fp8_checksum", "chain_fp8e5m2_aesgcm128", "chain_checksum_aesgcm256",
          "encrypt128", "encrypt256"]
# lmcache::all_dtypes(), in order, with their element sizes.
DTYPES = ["uint8", "float16", "bfloat16", "float32", "float8_e4m3fn", "float8_e5m2"]
DTYPE_BYTES = {"uint8": 1, "float16": 2, "bfloat16": 2, "float32": 4, "float8_e4m3fn": 1,
               "float8_e5m2": 1}
SALTS = ["", "tenant-a", "tenant-b"]
MODEL, KV_RANK, GROUP = "fuzz", 0, 0


def elements(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def checksum_frame(payload, chunk_hash):
    return (bytes([1]) + chunk_hash[:8].ljust(8, b"\0") + xxhash.xxh3_64(payload).digest()
            + payload)


def key_aad(chunk_hash, salt):
    def lv(b):
        return struct.pack(">I", len(b)) + b
    return (lv(chunk_hash) + lv(MODEL.encode()) + struct.pack(">q", KV_RANK) +
            struct.pack(">q", GROUP) + lv(salt.encode()))


def aesgcm_frame(payload, bits, salt, chunk_hash, bind, iv_seed, label=b"lmcache-l2-aesgcm-v1"):
    key = HKDF(algorithm=hashes.SHA256(), length=bits // 8, salt=None,
               info=label + salt.encode()).derive(MASTER_KEY)
    iv = pattern(12, iv_seed)
    aad = key_aad(chunk_hash, salt) if bind else None
    return bytes([1]) + iv + AESGCM(key).encrypt(iv, payload, aad)


def frame_for(serde, groups, chunk_hash, salt, seed):
    """A valid frame of `serde` for a destination of `groups` [(dtype, shape)]."""
    n_elems = sum(elements(s) for _, s in groups)
    n_bytes = sum(elements(s) * DTYPE_BYTES[d] for d, s in groups)
    codes = pattern(n_elems, seed)  # any byte is an fp8 code
    payload = pattern(n_bytes, seed)
    if serde.startswith("fp8"):
        return codes
    if serde == "checksum":
        return checksum_frame(payload, chunk_hash)
    if serde.startswith("encrypt"):
        bits = 128 if serde == "encrypt128" else 256
        return aesgcm_frame(payload, bits, salt, chunk_hash, False, seed,
                            b"lmcache-l2-encrypt-v1")
    if serde.startswith("aesgcm"):
        bits = 128 if serde == "aesgcm128" else 256
        return aesgcm_frame(payload, bits, salt, chunk_hash, serde.endswith("bound"), seed)
    if serde == "chain_fp8_checksum":
        return checksum_frame(codes, chunk_hash)
    if serde == "chain_fp8e5m2_aesgcm128":
        return aesgcm_frame(codes, 128, salt, chunk_hash, False, seed)
    if serde == "chain_checksum_aesgcm256":
        return aesgcm_frame(checksum_frame(payload, chunk_hash), 256, salt, chunk_hash, False,
                            seed)
    raise ValueError(serde)


def serde_input(serde, groups, chunk_hash, salt, mode, param, frame):
    out = bytes([SERDES.index(serde), len(groups)])
    for dtype, shape in groups:
        out += bytes([DTYPES.index(dtype), len(shape)] + list(shape))
    out += bytes([len(chunk_hash)]) + chunk_hash + bytes([SALTS.index(salt), mode, param])
    return out + frame


def serde_frame_seeds():
    seeds = {}
    float_groups = [("float32", (2, 3)), ("bfloat16", (4,)), ("float16", (1, 5))]
    one_group = [("float16", (16, 16))]
    any_groups = [("uint8", (3,)), ("float8_e4m3fn", (2, 2)), ("float32", ())]
    hashes_ = [b"\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11", b"\x01\x02\x03", b"\x00" * 16]
    for i, serde in enumerate(SERDES):
        fp8_only = serde.startswith("fp8") or serde.startswith("chain_fp8")
        layouts = [("floats", float_groups), ("one", one_group)]
        if not fp8_only:
            layouts.append(("bytes", any_groups))
        for j, (lname, groups) in enumerate(layouts):
            chunk_hash = hashes_[(i + j) % len(hashes_)]
            salt = SALTS[(i + j) % len(SALTS)]
            frame = frame_for(serde, groups, chunk_hash, salt, 7 * i + j)
            seeds["%s-%s" % (serde, lname)] = serde_input(serde, groups, chunk_hash, salt, 0, 0,
                                                          frame)
        # The other source layouts over the first frame: narrowed by 3 bytes after 3 bytes of
        # tail, fp8 groups, two uint8 groups.
        groups = float_groups
        chunk_hash, salt = hashes_[i % len(hashes_)], SALTS[i % len(SALTS)]
        frame = frame_for(serde, groups, chunk_hash, salt, 7 * i)
        seeds["%s-narrowed" % serde] = serde_input(serde, groups, chunk_hash, salt, 1, 3,
                                                   frame + b"\xff\xff\xff")
        seeds["%s-fp8-groups" % serde] = serde_input(serde, groups, chunk_hash, salt, 2,
                                                     1 if "e5m2" in serde else 0, frame)
        seeds["%s-two-groups" % serde] = serde_input(serde, groups, chunk_hash, salt, 3, 5,
                                                     frame)
        seeds["%s-truncated" % serde] = serde_input(serde, groups, chunk_hash, salt, 0, 0,
                                                    frame[:-1])
    seeds["empty-layout"] = serde_input("checksum", [], b"", "", 0, 0,
                                        checksum_frame(b"", b""))
    return seeds


# --- lmcr_record -----------------------------------------------------------------------------
# LMCache's frozen LMCR v1 records (reference/lmcache/serde/testdata/lmcr_vectors.json), whole,
# damaged and cut, for the decode op; plain inputs for the round-trip op.
LMCR_VECTORS = os.path.join(os.path.dirname(FUZZ_DIR), "reference", "lmcache", "serde",
                            "testdata", "lmcr_vectors.json")


def lmcr_record_seeds():
    seeds = {}
    with open(LMCR_VECTORS) as f:
        vectors = json.load(f)["vectors"]
    for v in vectors:
        record = bytes.fromhex(v["record"])
        seeds["decode-%s" % v["name"]] = bytes([0]) + record
        seeds["decode-%s-tail" % v["name"]] = bytes([0]) + record + b"\xff" * 5
        seeds["decode-%s-cut" % v["name"]] = bytes([0]) + record[:-3]
        flipped = bytearray(record)
        flipped[-2] ^= 0x10
        seeds["decode-%s-flipped" % v["name"]] = bytes([0]) + bytes(flipped)
    for framing in (0, 1):
        for chunk, level, n in ((0, 6, 0), (3, 1, 100), (63, 9, 3000)):
            seeds["round-trip-%s-%d-%d" % ("gzip" if framing else "raw", chunk, n)] = (
                bytes([1, framing, chunk, level]) + pattern(n, chunk))
    return seeds


# --- fs_object -------------------------------------------------------------------------------
FS_SHORT_KEY = "fuzz-object"
FS_LONG_KEY = "fuzz-" + "x" * 295


def fs_object(key, payload, magic=b"LMC2"):
    crc = zlib.crc32(payload, zlib.crc32(key.encode()))
    return payload + struct.pack("<I", crc) + magic


def fs_input(flags, kind, natural, asked, data):
    return bytes([flags, kind, 0 if natural else 1]) + struct.pack("<H", asked) + data


def fs_object_seeds():
    seeds = {}
    small = pattern(100, 1)
    big = pattern(5000, 2)  # past one 4096-byte O_DIRECT block
    for flags in range(16):
        crc, long_key = flags & 1, flags & 4
        key = FS_LONG_KEY if long_key else FS_SHORT_KEY
        payload = big if flags & 8 else small
        data = fs_object(key, payload) if crc else payload
        seeds["object-flags%02d" % flags] = fs_input(flags, 0, True, 0, data)
    seeds["crc32-older-format"] = fs_input(1, 0, True, 0, fs_object(FS_SHORT_KEY, small, b"LMC1"))
    seeds["crc32-other-key"] = fs_input(1, 0, True, 0, fs_object("other-key", small))
    seeds["wrong-length"] = fs_input(0, 0, False, 99, small)
    seeds["empty-object"] = fs_input(1, 0, True, 0, fs_object(FS_SHORT_KEY, b""))
    for kind, name in [(1, "directory"), (2, "symlink"), (3, "fifo"), (4, "absent")]:
        seeds[name] = fs_input(1, kind, True, 0, fs_object(FS_SHORT_KEY, small))
    return seeds


# --- resp_reply ------------------------------------------------------------------------------
RESP_OPS = ["command", "get_many", "set_many", "exists_many", "del_many"]


def resp_input(op, param, lens, reply):
    lens = list(lens) + [0] * (4 - len(lens))
    return bytes([RESP_OPS.index(op), param] + lens) + reply


def bulk(b):
    return b"$%d\r\n%s\r\n" % (len(b), b)


def resp_reply_seeds():
    seeds = {}
    replies = {
        "simple": b"+OK\r\n",
        "error": b"-ERR wrong number of arguments\r\n",
        "integer": b":-42\r\n",
        "bulk": bulk(b"hello\r\nworld"),
        "null": b"$-1\r\n",
        "null-array": b"*-1\r\n",
        "array": b"*3\r\n" + bulk(b"a") + b":1\r\n*2\r\n+x\r\n$-1\r\n",
        "nested": b"*1\r\n" * 8 + b":8\r\n",
        "empty-array": b"*0\r\n",
    }
    for name, reply in replies.items():
        seeds["command-" + name] = resp_input("command", 20, [], reply)
    seeds["command-over-limit"] = resp_input("command", 4, [], bulk(b"x" * 40))
    v5, v3 = pattern(5, 1), pattern(3, 2)
    seeds["get-hits"] = resp_input("get_many", 1, [5, 3], bulk(v5) + bulk(v3))
    seeds["get-miss-and-error"] = resp_input("get_many", 2, [5, 4, 3],
                                             b"$-1\r\n-ERR WRONGTYPE\r\n" + bulk(v3))
    seeds["get-wrong-length"] = resp_input("get_many", 1, [5, 3], bulk(v3) + bulk(v5))
    seeds["get-cut-short"] = resp_input("get_many", 0, [5], b"$5\r\nab")
    seeds["set-ok"] = resp_input("set_many", 1, [4, 4], b"+OK\r\n+OK\r\n")
    seeds["set-refused"] = resp_input("set_many", 1, [4, 4], b"+OK\r\n-OOM command not allowed\r\n")
    seeds["exists"] = resp_input("exists_many", 3, [], b":1\r\n:0\r\n:2\r\n:0\r\n")
    seeds["del"] = resp_input("del_many", 1, [], b":1\r\n:0\r\n")
    seeds["del-error"] = resp_input("del_many", 0, [], b"-ERR no\r\n")
    return seeds


# --- config_json -----------------------------------------------------------------------------
def config_json_seeds():
    aes = {"type": "aesgcm", "key_provider": "hkdf", "aes_bits": 256, "master_key_path": "k",
           "bind_key": True, "max_workers": 2}
    configs = {
        "fp8": {"type": "fp8"},
        "fp8-all-keys": {"type": "fp8", "fp8_dtype": "float8_e5m2", "max_workers": 2,
                         "overflow": "saturating", "kernel": "scalar"},
        "fp8-simd": {"type": "fp8", "kernel": "simd", "simd_target": "SSE4"},
        "checksum": {"type": "checksum", "max_workers": 1},
        "aesgcm": aes,
        "aesgcm-missing-key": {"type": "aesgcm", "master_key_path": "missing"},
        "aesgcm-key-is-dir": {"type": "aesgcm", "master_key_path": "dir"},
        "aesgcm-empty-key": {"type": "aesgcm", "aes_bits": 128, "master_key_path": "empty"},
        "chain": {"type": "chain", "stages": [{"type": "fp8"}, {"type": "checksum"}],
                  "max_workers": 4},
        "chain-three": {"type": "chain", "stages": [
            {"type": "fp8", "fp8_dtype": "float8_e5m2"}, {"type": "checksum"},
            {"type": "aesgcm", "aes_bits": 128, "master_key_path": "k"}]},
        "chain-nested": {"type": "chain", "stages": [{"type": "chain", "stages": []}]},
        "mock": {"type": "mock", "max_size_gb": 1, "mock_bandwidth_gb": 10,
                 "lend_load_views": True, "run_when_idle": False},
        "mock-with-serde": {"type": "mock", "max_size_gb": 0.5, "mock_bandwidth_gb": 10,
                            "serde": {"type": "fp8", "fp8_dtype": "float8_e5m2"}},
        "resp": {"type": "resp", "host": "127.0.0.1", "port": 6379, "num_workers": 8,
                 "username": "u", "password": "p", "connect_timeout_ms": 2000,
                 "io_timeout_ms": 5000, "max_capacity_gb": 1.5, "task_deadline_ms": 10000,
                 "key_namespace": "run-1"},
        "fs-with-serde": {"type": "fs", "base_path": "/nonexistent/lmcache", "use_odirect": True,
                          "checksum": "crc32", "num_workers": 4, "max_capacity_gb": 0,
                          "serde": {"type": "chain", "stages": [{"type": "fp8"},
                                                                 {"type": "checksum"}]}},
    }
    seeds = {name: json.dumps(c, sort_keys=True).encode() for name, c in configs.items()}
    seeds["not-an-object"] = b"[1, \"fp8\", null]"
    return seeds


# --- key_codec -------------------------------------------------------------------------------
KEY_NAMESPACES = ["", "run-1"]
SAFE = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


def escape(b):
    return "".join(chr(c) if c in SAFE else "%%%02X" % c for c in b)


def key_string(namespace, model, rank, group, chunk_hash, salt):
    """KeyCodec's string (storage/lmcache/bridge/key_codec.h, format version 1)."""
    rank_field = "%08x" % rank if rank >= 0 else "-%07x" % -rank
    out = (namespace + "+" if namespace else "") + escape(model) + "@" + rank_field + "@"
    out += "%x" % group + "@" + chunk_hash.hex()
    return out + ("@" + escape(salt) if salt else "")


def key_codec_seeds():
    seeds = {}
    keys = [
        ("plain", "", b"llama", 3, 0, b"\x00\x01\xfe\xff", b""),
        ("escaped", "", b"meta-llama/Llama-3.1", 0x01020304, 7, b"\xab" * 16, b"tenant a"),
        ("negative-rank", "run-1", b"m", -5, 0, b"", b"s"),
        ("min-rank", "", b"m", -(1 << 63), (1 << 63) - 1, b"\x10", b""),
        ("namespaced", "run-1", b"Qwen_2-7B", 1 << 32, 1, b"\x42" * 8, b"tenant-b"),
    ]
    for name, namespace, model, rank, group, chunk_hash, salt in keys:
        text = key_string(namespace, model, rank, group, chunk_hash, salt).encode()
        seeds[name] = (bytes([KEY_NAMESPACES.index(namespace)]) +
                       struct.pack("<qq", rank, group) + text)
    # Forms decode() must refuse: a lower-case escape, an unpadded rank, an empty salt field.
    seeds["lower-case-escape"] = bytes(17) + b"a%2fb@00000000@0@@"
    seeds["unpadded-rank"] = bytes(17) + b"m@3@0@ab"
    seeds["empty-salt-field"] = bytes(17) + b"m@00000003@0@ab@"
    return seeds


TARGETS = {
    "serde_frame": serde_frame_seeds,
    "lmcr_record": lmcr_record_seeds,
    "fs_object": fs_object_seeds,
    "resp_reply": resp_reply_seeds,
    "config_json": config_json_seeds,
    "key_codec": key_codec_seeds,
}


def wanted():
    return {(target, name): data for target, make in TARGETS.items()
            for name, data in make().items()}


def present():
    out = {}
    if not os.path.isdir(CORPUS_DIR):
        return out
    for root, _, files in os.walk(CORPUS_DIR):
        for name in files:
            path = os.path.join(root, name)
            rel = os.path.relpath(path, CORPUS_DIR)
            target, _, seed = rel.partition(os.sep)
            with open(path, "rb") as f:
                out[(target, seed)] = f.read()
    return out


def main(argv):
    if len(argv) != 2 or argv[1] not in ("--write", "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    want = wanted()
    if argv[1] == "--write":
        for (target, name) in present():
            os.remove(os.path.join(CORPUS_DIR, target, name))
        for (target, name), data in want.items():
            os.makedirs(os.path.join(CORPUS_DIR, target), exist_ok=True)
            with open(os.path.join(CORPUS_DIR, target, name), "wb") as f:
                f.write(data)
        print("wrote %d seeds under %s" % (len(want), CORPUS_DIR))
        return 0
    have = present()
    problems = ["missing: %s/%s" % k for k in sorted(want.keys() - have.keys())]
    problems += ["not generated: %s/%s" % k for k in sorted(have.keys() - want.keys())]
    problems += ["differs: %s/%s" % k for k in sorted(want.keys() & have.keys())
                 if want[k] != have[k]]
    if problems:
        print("FAIL: fuzz/corpus/ is not what make_seeds.py writes (run "
              "fuzz/tools/make_seeds.py --write; inputs that once failed belong in "
              "fuzz/regressions/<target>/):\n  " + "\n  ".join(problems))
        return 1
    print("%d seeds in %d corpora match make_seeds.py" % (len(want), len(TARGETS)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
