#!/usr/bin/env python3
"""Byte-exact test vectors for the checksum, aesgcm and encrypt frames (docs/integrity.md).

Every vector is computed here, in Python, from the frame definitions alone, with
python3-xxhash and python3-cryptography (independently of the C++ code). aesgcm and encrypt
vectors (one frame, two HKDF labels) use a fixed IV so that a frame is one exact byte string; the C++ test (aesgcm_serde_test.cc,
checksum_serde_test.cc) sets the same IV through AesGcmSerializer::set_fixed_iv_for_testing()
and requires byte equality.

usage: lmcache_frame_vectors.py --write FILE   regenerate the committed vectors
       lmcache_frame_vectors.py --check FILE   recompute and compare (run by ctest)
"""
import json
import struct
import sys

import xxhash
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def fingerprint(chunk_hash: bytes) -> bytes:
    return chunk_hash[:8].ljust(8, b"\0")


def checksum_frame(payload: bytes, chunk_hash: bytes) -> bytes:
    return bytes([1]) + fingerprint(chunk_hash) + xxhash.xxh3_64(payload).digest() + payload


# The HKDF label of each serde on the aesgcm frame (LMCache's aesgcm and encrypt).
LABELS = {"aesgcm": b"lmcache-l2-aesgcm-v1", "encrypt": b"lmcache-l2-encrypt-v1"}


def derive(master: bytes, salt: str, bits: int, serde: str = "aesgcm") -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=bits // 8, salt=None,
                info=LABELS[serde] + salt.encode()).derive(master)


def key_aad(chunk_hash: bytes, model: str, kv_rank: int, group: int, salt: str) -> bytes:
    """The canonical ObjectKey encoding bound as associated data under bind_key."""
    def lv(b: bytes) -> bytes:
        return struct.pack(">I", len(b)) + b
    return (lv(chunk_hash) + lv(model.encode()) + struct.pack(">q", kv_rank) +
            struct.pack(">q", group) + lv(salt.encode()))


def pattern(n: int, seed: int) -> bytes:
    return bytes((i * 37 + seed * 101 + 11) % 256 for i in range(n))


KEY = {"model_name": "m", "kv_rank": 3, "object_group_id": 0}


def vectors():
    out = {"checksum": [], "aesgcm": [], "encrypt": []}
    for n, chunk_hash in [(2, "00"), (1, "0123456789abcdef0011"), (17, "abcd"),
                          (4099, "ffeeddccbbaa99887766")]:
        payload = pattern(n, n)
        out["checksum"].append({
            "chunk_hash": chunk_hash, "payload": payload.hex(),
            "frame": checksum_frame(payload, bytes.fromhex(chunk_hash)).hex()})
    for i, (bits, salt, n, bind) in enumerate([(128, "", 16, False), (128, "tenant-a", 4099, False),
                                                (256, "tenant-b", 1, False),
                                                (256, "tenant-a", 33, True)]):
        master = pattern(32, 200 + i)
        iv = pattern(12, 300 + i)
        payload = pattern(n, 400 + i)
        chunk_hash = pattern(10, 500 + i)
        aad = key_aad(chunk_hash, KEY["model_name"], KEY["kv_rank"], KEY["object_group_id"],
                      salt) if bind else None
        frame = bytes([1]) + iv + AESGCM(derive(master, salt, bits)).encrypt(iv, payload, aad)
        out["aesgcm"].append({
            "aes_bits": bits, "bind_key": bind, "master_key": master.hex(), "iv": iv.hex(),
            "chunk_hash": chunk_hash.hex(), **KEY, "cache_salt": salt,
            "payload": payload.hex(), "frame": frame.hex()})
    # encrypt: LMCache's keys only (no bind_key); the same shapes under its own label.
    for i, (bits, salt, n) in enumerate([(128, "", 16), (128, "tenant-a", 4099),
                                         (256, "tenant-b", 1), (256, "", 0)]):
        master = pattern(32, 600 + i)
        iv = pattern(12, 700 + i)
        payload = pattern(n, 800 + i)
        chunk_hash = pattern(10, 900 + i)
        frame = bytes([1]) + iv + AESGCM(derive(master, salt, bits, "encrypt")).encrypt(
            iv, payload, None)
        out["encrypt"].append({
            "aes_bits": bits, "bind_key": False, "master_key": master.hex(), "iv": iv.hex(),
            "chunk_hash": chunk_hash.hex(), **KEY, "cache_salt": salt,
            "payload": payload.hex(), "frame": frame.hex()})
    return out


def main(argv):
    if len(argv) != 3 or argv[1] not in ("--write", "--check"):
        print(__doc__, file=sys.stderr)
        return 2
    want = vectors()
    if argv[1] == "--write":
        with open(argv[2], "w") as f:
            json.dump(want, f, indent=1)
            f.write("\n")
        return 0
    with open(argv[2]) as f:
        have = json.load(f)
    if have != want:
        print("FAIL: %s differs from the frames Python computes from their definitions"
              % argv[2])
        return 1
    print("%d checksum, %d aesgcm and %d encrypt vectors match their definitions"
          % (len(want["checksum"]), len(want["aesgcm"]), len(want["encrypt"])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
