#!/usr/bin/env python3
"""Byte-exact test vectors for the checksum, aesgcm, encrypt, fp8 and chain frames
(docs/integrity.md, docs/fp8.md).

Every vector is computed here, in Python, from the frame definitions alone, with
python3-xxhash and python3-cryptography (independently of the C++ code); fp8 codes follow the
one-rule model of docs/fp8.md section 3.5, decoded values section 4. aesgcm and encrypt
vectors (one frame, two HKDF labels) use a fixed IV so that a frame is one exact byte string; the C++ test (aesgcm_serde_test.cc,
checksum_serde_test.cc) sets the same IV through AesGcmSerializer::set_fixed_iv_for_testing()
and requires byte equality.

usage: lmcache_frame_vectors.py --write FILE   regenerate the committed vectors
       lmcache_frame_vectors.py --check FILE   recompute and compare (run by ctest)
"""
import json
import math
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

# The master key of the conformance kit's own aesgcm / encrypt descriptors (reference_impls.cc):
# vectors under it apply to those descriptors, and to any serde configured with a key file
# holding these 22 bytes (conformance/README.md, MatchesGoldenVectors).
KIT_MASTER_KEY = b"conformance master key"


# fp8 (docs/fp8.md): the grid of finite magnitudes by code, plus the virtual code N.
FP8 = {"float8_e4m3fn": {"mant": 3, "bias": 7, "n": 0x7F, "virtual": 480.0},
       "float8_e5m2": {"mant": 2, "bias": 15, "n": 0x7C, "virtual": 65536.0}}


def fp8_value(fmt: str, code: int) -> float:
    f = FP8[fmt]
    e, m = code >> f["mant"], code & ((1 << f["mant"]) - 1)
    if e == 0:
        return m * 2.0 ** (1 - f["bias"] - f["mant"])
    return (1 + m / (1 << f["mant"])) * 2.0 ** (e - f["bias"])


def fp8_encode(x: float, fmt: str, saturating: bool) -> int:
    """Section 3.5's one-rule model (3.4 for saturating e4m3fn); x is a float32 value."""
    f = FP8[fmt]
    sign = 0x80 if math.copysign(1.0, x) < 0 else 0
    e4 = fmt == "float8_e4m3fn"
    if math.isnan(x):
        return 0x7F | sign
    if math.isinf(x):
        return ((0x7E if saturating else 0x7F) if e4 else 0x7C) | sign
    a = abs(x)
    grid = [fp8_value(fmt, c) for c in range(f["n"])] + [f["virtual"]]
    code = f["n"]
    if a < grid[-1]:
        i = max(c for c in range(f["n"]) if grid[c] <= a)
        lo, hi = a - grid[i], grid[i + 1] - a
        code = i if lo < hi else i + 1 if hi < lo else (i if i % 2 == 0 else i + 1)
    if code == f["n"] and e4 and saturating:
        code = 0x7E
    return code | sign


def fp8_decode_f32(fmt: str, code: int) -> bytes:
    """Section 4: exact for finite values and inf; the reference's NaN bits."""
    sign = code & 0x80
    mag = code & 0x7F
    if fmt == "float8_e4m3fn" and mag == 0x7F:
        bits = 0x7FF00000
    elif fmt == "float8_e5m2" and mag == 0x7C:
        bits = 0x7F800000
    elif fmt == "float8_e5m2" and mag > 0x7C:
        bits = 0x7FC00000 if mag == 0x7E else 0x7FE00000
    else:
        return struct.pack("<f", -fp8_value(fmt, mag) if sign else fp8_value(fmt, mag))
    return struct.pack("<I", bits | (0x80000000 if sign else 0))


def f32(x: float) -> float:
    return struct.unpack("<f", struct.pack("<f", x))[0]


def fp8_decode(fmt: str, code: int, dtype: str) -> bytes:
    """Section 4 in the destination's dtype: float32 as above; float16 that float32 narrowed
    (exact for every fp8 value; NaN keeps its sign and top mantissa bits); bfloat16 the float32's
    top half, except that every NaN is 0x7FC0, sign dropped."""
    word = struct.unpack("<I", fp8_decode_f32(fmt, code))[0]
    value = struct.unpack("<f", struct.pack("<I", word))[0]
    if dtype == "float32":
        return struct.pack("<I", word)
    if dtype == "bfloat16":
        return struct.pack("<H", 0x7FC0 if math.isnan(value) else word >> 16)
    if math.isnan(value):  # float16: sign, all-ones exponent, the top 10 mantissa bits
        return struct.pack("<H", ((word >> 16) & 0x8000) | 0x7C00 | ((word >> 13) & 0x3FF))
    return struct.pack("<e", value)


def narrow(x: float, dtype: str) -> float:
    """x as the nearest value of `dtype` (float32, float16 or bfloat16, round to nearest even;
    past float16's range, the infinity of its sign)."""
    if dtype == "float32" or math.isnan(x) or math.isinf(x):
        return f32(x)
    if dtype == "bfloat16":
        word = struct.unpack("<I", struct.pack("<f", x))[0]
        word = (word + 0x7FFF + ((word >> 16) & 1)) & 0xFFFF0000
        return struct.unpack("<f", struct.pack("<I", word))[0]
    try:
        return struct.unpack("<e", struct.pack("<e", x))[0]
    except OverflowError:
        return math.copysign(float("inf"), x)


def pack(x: float, dtype: str) -> bytes:
    if dtype == "float32":
        return struct.pack("<f", x)
    if dtype == "bfloat16":
        return struct.pack("<H", struct.unpack("<I", struct.pack("<f", x))[0] >> 16)
    return struct.pack("<e", x)


def fp8_inputs() -> list:
    """docs/fp8.md 3.6's worked examples, the edges of both formats, and one value per binary
    exponent from 2^-20 to 2^19 (past both formats' ranges at each end; mantissas from a fixed
    LCG, signs alternating). Every value is a float32."""
    def bits_after(x: float) -> float:
        return struct.unpack("<f", struct.pack("<I", struct.unpack("<I", struct.pack("<f", x))[0]
                                                + 1))[0]
    xs = [0.0, -0.0, 448.0, 464.0, bits_after(464.0), 480.0, 500.0, -1e6, 57344.0, 61440.0,
          60000.0, float("inf"), float("-inf"), float("nan"), -float("nan"), 2.0 ** -9,
          2.0 ** -10, 3 * 2.0 ** -10, 15 * 2.0 ** -10, 2.0 ** -16, 2.0 ** -17, -(2.0 ** -14),
          1.0625, 1.125, bits_after(1.125), -1.5, 1e-30, -3.0e38]
    state = 12345
    for i, exp in enumerate(range(-20, 20)):
        state = (state * 1103515245 + 12345) % (1 << 31)
        xs.append((-1) ** i * (1 + (state % 4096) / 4096.0) * 2.0 ** exp)
    return [f32(x) for x in xs]


def fp8_vector(fmt: str, overflow: str, dtype: str = "float32") -> dict:
    """fp8_inputs() as `dtype` values (float16 and bfloat16 widen exactly to float32, section 3,
    so the float32 rule encodes them)."""
    xs = [narrow(x, dtype) for x in fp8_inputs()]
    codes = bytes(fp8_encode(x, fmt, overflow == "saturating") for x in xs)
    return {"fp8_dtype": fmt, "overflow": overflow, "dtype": dtype, "elements": len(xs),
            "input": b"".join(pack(x, dtype) for x in xs).hex(), "frame": codes.hex(),
            "decoded": b"".join(fp8_decode(fmt, c, dtype) for c in codes).hex()}


def fp8_every_code(fmt: str) -> dict:
    """A decode-only vector: the 256 codes in order, and the float32 values they decode to (the
    NaN codes have no input that encodes to them, so there is no write to check)."""
    codes = bytes(range(256))
    decoded = b"".join(fp8_decode_f32(fmt, c) for c in codes)
    return {"fp8_dtype": fmt, "overflow": "nonsaturating", "dtype": "float32", "elements": 256,
            "decode_only": True, "input": decoded.hex(), "frame": codes.hex(),
            "decoded": decoded.hex()}


def vectors():
    out = {"checksum": [], "aesgcm": [], "encrypt": []}
    for n, chunk_hash in [(2, "00"), (1, "0123456789abcdef0011"), (17, "abcd"),
                          (4099, "ffeeddccbbaa99887766"), (256, "5a5a5a5a5a5a5a5a")]:
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
    # The kit's own master key (KIT_MASTER_KEY), once per serde, size and bind_key.
    for serde, bits, bind, n in [("aesgcm", 128, False, 64), ("aesgcm", 256, False, 64),
                                 ("aesgcm", 128, True, 64), ("aesgcm", 256, True, 64),
                                 ("encrypt", 128, False, 64), ("encrypt", 256, False, 64)]:
        iv = pattern(12, 1000 + bits + n + bind)
        payload = pattern(n, 1100 + bits)
        chunk_hash = pattern(8, 1200 + bits)
        salt = "tenant-k"
        aad = key_aad(chunk_hash, KEY["model_name"], KEY["kv_rank"], KEY["object_group_id"],
                      salt) if bind else None
        frame = bytes([1]) + iv + AESGCM(derive(KIT_MASTER_KEY, salt, bits, serde)).encrypt(
            iv, payload, aad)
        out[serde].append({
            "aes_bits": bits, "bind_key": bind, "master_key": KIT_MASTER_KEY.hex(),
            "iv": iv.hex(), "chunk_hash": chunk_hash.hex(), **KEY, "cache_salt": salt,
            "payload": payload.hex(), "frame": frame.hex()})
    out["fp8"] = [fp8_vector("float8_e4m3fn", "nonsaturating"),
                  fp8_vector("float8_e4m3fn", "saturating"),
                  fp8_vector("float8_e5m2", "nonsaturating"),
                  fp8_every_code("float8_e4m3fn"), fp8_every_code("float8_e5m2"),
                  fp8_vector("float8_e4m3fn", "nonsaturating", "float16"),
                  fp8_vector("float8_e5m2", "nonsaturating", "float16"),
                  fp8_vector("float8_e4m3fn", "nonsaturating", "bfloat16"),
                  fp8_vector("float8_e5m2", "nonsaturating", "bfloat16")]
    # chain fp8 (e4m3fn) -> checksum: the checksum frame of the fp8 bytes.
    fp8 = out["fp8"][0]
    chunk_hash = "0011223344556677"
    out["chain"] = [{
        "stages": [{"type": "fp8"}, {"type": "checksum"}], "chunk_hash": chunk_hash,
        "dtype": "float32", "elements": fp8["elements"], "input": fp8["input"],
        "frame": checksum_frame(bytes.fromhex(fp8["frame"]), bytes.fromhex(chunk_hash)).hex(),
        "decoded": fp8["decoded"]}]
    # chain fp8 (e4m3fn) -> aesgcm (256 bits, the kit's master key, no bind_key, empty salt):
    # the aesgcm frame of the fp8 bytes under a fixed IV. The stage names its key in hex
    # ("master_key_hex": the vectors' own field; a deployment's config names a key file).
    iv = pattern(12, 1300)
    sealed = AESGCM(derive(KIT_MASTER_KEY, "", 256)).encrypt(iv, bytes.fromhex(fp8["frame"]),
                                                             None)
    out["chain"].append({
        "stages": [{"type": "fp8"}, {"type": "aesgcm", "aes_bits": 256,
                                     "master_key_hex": KIT_MASTER_KEY.hex()}],
        "chunk_hash": chunk_hash, "dtype": "float32", "elements": fp8["elements"],
        "input": fp8["input"], "frame": (bytes([1]) + iv + sealed).hex(),
        "decoded": fp8["decoded"]})
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
    print("%s vectors match their definitions"
          % ", ".join("%d %s" % (len(v), k) for k, v in want.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
