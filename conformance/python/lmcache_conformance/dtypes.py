"""The dtypes a layout may hold, by the names the kit uses (PyTorch's, without "torch.").

Debian's torch 1.13 has no float8 dtypes: a float8 group is a torch.uint8 tensor, and its layout
dtype is the string "float8_e4m3fn" or "float8_e5m2" (a newer torch's dtype compares equal by
name through dtype_name()).
"""

from __future__ import annotations

import torch

FLOAT8_E4M3FN = "float8_e4m3fn"
FLOAT8_E5M2 = "float8_e5m2"

_BY_NAME = {
    "uint8": torch.uint8,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "float32": torch.float32,
    FLOAT8_E4M3FN: getattr(torch, "float8_e4m3fn", FLOAT8_E4M3FN),
    FLOAT8_E5M2: getattr(torch, "float8_e5m2", FLOAT8_E5M2),
}


def dtype_of(name: str) -> object:
    """The layout dtype of a kit dtype name ("float32", "float8_e4m3fn", ...)."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise ValueError(f"unknown dtype name {name!r}") from None


def dtype_name(dtype: object) -> str:
    """Inverse of dtype_of(): "float32" for torch.float32, the string itself for a float8 name."""
    if isinstance(dtype, str):
        name = dtype.removeprefix("torch.")
    else:
        name = str(dtype).removeprefix("torch.")
    if name not in _BY_NAME:
        raise ValueError(f"unsupported dtype {dtype!r}")
    return name


def element_size(dtype: object) -> int:
    name = dtype_name(dtype)
    return 1 if name in ("uint8", FLOAT8_E4M3FN, FLOAT8_E5M2) else torch.empty(0, dtype=_BY_NAME[name]).element_size()


def storage_dtype(dtype: object) -> torch.dtype:
    """The torch dtype a group's tensor has: the dtype itself, or uint8 for a float8 name."""
    name = dtype_name(dtype)
    d = _BY_NAME[name]
    return d if isinstance(d, torch.dtype) else torch.uint8
