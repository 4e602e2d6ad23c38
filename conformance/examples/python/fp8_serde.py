"""A Python fp8 serde written to LMCache's serde interfaces, bit-exact with PyTorch's casts.

Debian's torch 1.13 has no float8 dtypes, so the cast is written with integer ops on the float32
bits (docs/fp8.md §3: round to nearest, ties to even, over the exact value; e4m3fn turns |x| > 464
into NaN, e5m2 overflows to inf), and decoding reads a 256-entry table. The wire format is the
reference's and LMCache's: one byte per element, groups back to back, no header.

    lmcache-conform --python conformance/examples/python/fp8_serde.py:make_e4m3fn
"""

from __future__ import annotations

import struct

import torch

from lmcache_conformance import Deserializer, MemoryLayoutDesc, MemoryObj, ObjectKey, Serializer
from lmcache_conformance import declare

_INPUTS = (torch.float32, torch.float16, torch.bfloat16)

# Per format: mantissa bits, exponent bias, the float32 bits of the smallest normal, the
# subnormal quantum's inverse (2^(bias - 1 + mantissa bits)) and the code of the overflow
# (NaN for e4m3fn, inf for e5m2) and of NaN.
_FORMATS = {
    "float8_e4m3fn": dict(mant=3, bias=7, min_normal=0x3C800000, sub_scale=512.0, overflow=0x7F,
                          nan=0x7F, inf=0x7F),
    "float8_e5m2": dict(mant=2, bias=15, min_normal=0x38800000, sub_scale=65536.0, overflow=0x7C,
                        nan=0x7F, inf=0x7C),
}


def _encode(x: torch.Tensor, f: dict) -> torch.Tensor:
    """float32 tensor -> uint8 codes, PyTorch's non-saturating cast."""
    bits = x.contiguous().view(torch.int32)
    sign = torch.where(bits < 0, 0x80, 0).to(torch.int32)
    a = bits & 0x7FFFFFFF
    shift = 23 - f["mant"]
    # Normal range: round the mantissa to `mant` bits (ties to even), then rebias the exponent.
    odd = (a >> shift) & 1
    rounded = (a + ((1 << (shift - 1)) - 1) + odd) >> shift
    normal = rounded - ((127 - f["bias"]) << f["mant"])
    # Subnormal range: the fixed quantum; torch.round rounds half to even.
    magnitude = x.abs()
    sub = torch.round(magnitude * f["sub_scale"]).to(torch.int32)
    code = torch.where(a < f["min_normal"], sub, normal)
    code = torch.clamp(code, max=f["overflow"])  # past the largest finite: NaN / inf
    code = torch.where(a == 0x7F800000, torch.full_like(code, f["inf"]), code)
    code = torch.where(a > 0x7F800000, torch.full_like(code, f["nan"]), code)
    return (code | sign).to(torch.uint8)


def _decode_table(name: str) -> torch.Tensor:
    """float32 bit patterns of the 256 codes (NaNs as the reference writes them, docs/fp8.md §4)."""
    f = _FORMATS[name]
    mant, bias = f["mant"], f["bias"]
    out = []
    for code in range(256):
        s, e, m = code >> 7, (code >> mant) & ((1 << (7 - mant)) - 1), code & ((1 << mant) - 1)
        top = (1 << (7 - mant)) - 1
        if name == "float8_e4m3fn" and e == top and m == (1 << mant) - 1:
            bits = 0x7FF00000
        elif name == "float8_e5m2" and e == top:
            bits = 0x7F800000 if m == 0 else {1: 0x7FE00000, 2: 0x7FC00000, 3: 0x7FE00000}[m]
        else:
            value = m * 2.0 ** (1 - bias - mant) if e == 0 else (1 + m / (1 << mant)) * 2.0 ** (e - bias)
            bits = struct.unpack("<I", struct.pack("<f", value))[0]
        bits |= s << 31
        out.append(bits - (1 << 32) if bits >= 1 << 31 else bits)
    return torch.tensor(out, dtype=torch.int32).view(torch.float32)


def _kv_groups(obj: MemoryObj) -> list:
    """The object's groups, each a float32 / float16 / bfloat16 tensor, else ValueError."""
    groups = [obj.get_tensor(i) for i in range(obj.get_num_groups())]
    for t in groups:
        if t.dtype not in _INPUTS:
            raise ValueError(f"Fp8 serde: unsupported dtype {t.dtype}")
    return groups


def _frame(kv: MemoryObj, codes: MemoryObj, role: str) -> tuple:
    """The fp8 frame of the KV object `kv` in the buffer `codes`: its size in bytes (one byte per
    element, groups back to back) and, per non-empty group, (tensor, offset, element count).
    ValueError when `codes` (the `role` buffer) is too small for it."""
    groups = _kv_groups(kv)
    need = sum(t.numel() for t in groups)
    if codes.get_size() < need:
        raise ValueError(f"Fp8 {role} buffer too small: got {codes.get_size()} bytes, need {need}")
    spans = []
    offset = 0
    for t in groups:
        n = t.numel()
        if n:
            spans.append((t, offset, n))
        offset += n
    return need, spans


class Fp8Serializer(Serializer):
    def __init__(self, fp8_dtype: str = "float8_e4m3fn") -> None:
        self._format = _FORMATS[fp8_dtype]

    def serialize(self, src: MemoryObj, dst: MemoryObj, key: ObjectKey) -> int:
        need, spans = _frame(src, dst, "destination")
        out = dst.raw_data
        for t, offset, n in spans:
            out[offset : offset + n] = self.encode(t.reshape(-1).to(torch.float32))
        return need

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        return _encode(x, self._format)

    def estimate_serialized_size(self, layout_desc: MemoryLayoutDesc) -> int:
        return int(1.5 * sum(s.numel() for s in layout_desc.shapes))


class Fp8Deserializer(Deserializer):
    def __init__(self, fp8_dtype: str = "float8_e4m3fn") -> None:
        self._table = _decode_table(fp8_dtype)

    def deserialize(self, src: MemoryObj, dst: MemoryObj, key: ObjectKey) -> None:
        _, spans = _frame(dst, src, "source")
        codes = src.raw_data
        for t, offset, n in spans:
            values = self._table[codes[offset : offset + n].long()]
            t.view(-1).copy_(values.to(t.dtype))


@declare(mirrors={"type": "fp8", "fp8_dtype": "float8_e4m3fn"})
def make_e4m3fn():
    return Fp8Serializer("float8_e4m3fn"), Fp8Deserializer("float8_e4m3fn")


@declare(mirrors={"type": "fp8", "fp8_dtype": "float8_e5m2"})
def make_e5m2():
    return Fp8Serializer("float8_e5m2"), Fp8Deserializer("float8_e5m2")
