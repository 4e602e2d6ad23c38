#!/usr/bin/env python3
"""Interop test: lmcache-serde's checksum / aesgcm / encrypt frames against LMCache's definitions.

The frames are written here in Python straight from their definitions (docs/integrity.md),
with python3-xxhash and python3-cryptography, independently of the C++ code:
  checksum: [u8 version=1][8-byte fingerprint][XXH3-64 big-endian][payload]
  aesgcm:   [u8 version=1][12-byte IV][AES-GCM(HKDF-SHA256 key) ciphertext || tag]
  encrypt:  the same frame, its key derived under LMCache's label "lmcache-l2-encrypt-v1"
It checks both ways: frames the CLI encodes decode and verify here, and frames made here decode
through the CLI. For aesgcm the two sides cannot agree on a random IV, so the C++ -> Python
direction decrypts with the IV read from the frame, and Python -> C++ uses a fresh IV.

usage: lmcache_frames_interop_test.py /path/to/lmcache-serde
"""
import os
import subprocess
import sys
import tempfile

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

# The frame definitions, written once beside this test (the same ones the vectors come from).
from lmcache_frame_vectors import checksum_frame, derive

CLI = sys.argv[1]
CHUNK_HASH = bytes.fromhex("0123456789abcdef0011")  # longer than 8: fingerprint is the first 8
SALT = "tenant-a"


def aesgcm_frame(payload: bytes, master: bytes, salt: str, bits: int, serde="aesgcm") -> bytes:
    iv = os.urandom(12)
    return bytes([1]) + iv + AESGCM(derive(master, salt, bits, serde)).encrypt(iv, payload, None)


def aesgcm_open(frame: bytes, master: bytes, salt: str, bits: int, serde="aesgcm") -> bytes:
    assert frame[0] == 1, "version"
    return AESGCM(derive(master, salt, bits, serde)).decrypt(frame[1:13], frame[13:], None)


def cli(mode, config, data, chunk_hash=CHUNK_HASH, salt=SALT, extra=()):
    args = [CLI, mode, "--config", config, "--dtype", "uint8", "--chunk-hash", chunk_hash.hex(),
            "--cache-salt", salt, *extra]
    return subprocess.run(args, input=data, capture_output=True)


def main():
    failures = []
    payload = bytes((i * 37 + 11) % 256 for i in range(4099))
    with tempfile.TemporaryDirectory() as tmp:
        key_path = os.path.join(tmp, "master.key")
        master = os.urandom(32)
        with open(key_path, "wb") as f:
            f.write(master)

        # checksum, C++ -> Python: byte-equal to the definition.
        r = cli("encode", '{"type":"checksum"}', payload)
        if r.returncode != 0 or r.stdout != checksum_frame(payload, CHUNK_HASH):
            failures.append("checksum: CLI frame differs from the definition: " + r.stderr.decode())
        # checksum, Python -> C++.
        r = cli("decode", '{"type":"checksum"}', checksum_frame(payload, CHUNK_HASH),
                extra=["--count", str(len(payload))])
        if r.returncode != 0 or r.stdout != payload:
            failures.append("checksum: CLI cannot decode a Python frame: " + r.stderr.decode())
        # checksum: a flipped payload bit and another chunk's frame are rejected by the CLI.
        bad = bytearray(checksum_frame(payload, CHUNK_HASH))
        bad[-1] ^= 1
        if cli("decode", '{"type":"checksum"}', bytes(bad),
               extra=["--count", str(len(payload))]).returncode == 0:
            failures.append("checksum: CLI accepted a corrupted frame")
        if cli("decode", '{"type":"checksum"}', checksum_frame(payload, b"\x99" * 8),
               extra=["--count", str(len(payload))]).returncode == 0:
            failures.append("checksum: CLI accepted another chunk's frame")

        for serde, other in (("aesgcm", "encrypt"), ("encrypt", "aesgcm")):
            for bits in (128, 256):
                name = "%s-%d" % (serde, bits)
                config = '{"type":"%s","aes_bits":%d,"master_key_path":"%s"}' % (serde, bits,
                                                                                 key_path)
                r = cli("encode", config, payload)
                try:
                    if r.returncode != 0:
                        raise ValueError(r.stderr.decode())
                    if aesgcm_open(r.stdout, master, SALT, bits, serde) != payload:
                        raise ValueError("plaintext differs")
                except Exception as e:  # noqa: BLE001 -- any failure is a finding
                    failures.append("%s: CLI frame does not open in Python: %r" % (name, e))
                try:
                    aesgcm_open(r.stdout, master, SALT, bits, other)
                    failures.append("%s: CLI frame opens under %s's label" % (name, other))
                except Exception:  # noqa: BLE001 -- the tag must fail
                    pass
                r = cli("decode", config, aesgcm_frame(payload, master, SALT, bits, serde),
                        extra=["--count", str(len(payload))])
                if r.returncode != 0 or r.stdout != payload:
                    failures.append("%s: CLI cannot decode a Python frame: %s"
                                    % (name, r.stderr.decode()))
                for salt, frame_serde, what in (("tenant-b", serde, "another tenant's frame"),
                                                (SALT, other, "a %s frame" % other)):
                    if cli("decode", config, aesgcm_frame(payload, master, salt, bits, frame_serde),
                           extra=["--count", str(len(payload))]).returncode == 0:
                        failures.append("%s: CLI accepted %s" % (name, what))
        # chain fp8 -> checksum: the checksum frame of the fp8 bytes (fp8 of uint8 is rejected,
        # so feed float32 and compare against the fp8-only encoding).
        floats = b"".join(int(x).to_bytes(4, "little") for x in
                          [0x3f800000, 0x40000000, 0xbf000000, 0x00000000] * 64)
        fp8 = subprocess.run([CLI, "encode", "--config", '{"type":"fp8"}', "--dtype", "float32"],
                             input=floats, capture_output=True).stdout
        r = subprocess.run([CLI, "encode", "--config",
                            '{"type":"chain","stages":[{"type":"fp8"},{"type":"checksum"}]}',
                            "--dtype", "float32", "--chunk-hash", CHUNK_HASH.hex()],
                           input=floats, capture_output=True)
        if r.returncode != 0 or r.stdout != checksum_frame(fp8, CHUNK_HASH):
            failures.append("chain fp8->checksum: frame is not checksum(fp8): " + r.stderr.decode())
        r = subprocess.run([CLI, "decode", "--config",
                            '{"type":"chain","stages":[{"type":"fp8"},{"type":"checksum"}]}',
                            "--dtype", "float32", "--count", str(len(floats) // 4),
                            "--chunk-hash", CHUNK_HASH.hex()],
                           input=checksum_frame(fp8, CHUNK_HASH), capture_output=True)
        if r.returncode != 0 or r.stdout != floats:
            failures.append("chain fp8->checksum: decode failed: " + r.stderr.decode())

    for f in failures:
        print("FAIL:", f)
    print("%d failure(s)" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
