"""Value types a Python implementation receives, with LMCache's names (lmcache.v1.distributed.api).

ObjectKey and MemoryLayoutDesc mirror LMCache's classes field for field; the checks at
construction are LMCache's (docs/python.md lists what is mirrored).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import torch

_MAX_CACHE_SALT = 128


@dataclasses.dataclass(frozen=True)
class ObjectKey:
    """An immutable key; equality and hash over every field (LMCache's ObjectKey)."""

    chunk_hash: bytes
    model_name: str
    kv_rank: int
    object_group_id: int = 0
    cache_salt: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.chunk_hash, (bytes, bytearray)):
            raise TypeError(f"chunk_hash must be bytes (got {type(self.chunk_hash).__name__})")
        if "@" in self.model_name:
            raise ValueError(f"model_name must not contain '@' (got {self.model_name!r})")
        if self.object_group_id < 0:
            raise ValueError(f"object_group_id must be >= 0 (got {self.object_group_id})")
        if any(c in self.cache_salt for c in "@/\\\0"):
            raise ValueError(f"cache_salt must not contain '@', '/', '\\' or NUL (got {self.cache_salt!r})")
        if len(self.cache_salt) > _MAX_CACHE_SALT:
            raise ValueError(f"cache_salt longer than {_MAX_CACHE_SALT} characters")


class MemoryLayoutDesc:
    """Shapes and dtypes of an object's groups (LMCache's MemoryLayoutDesc), immutable."""

    __slots__ = ("_shapes", "_dtypes")

    def __init__(self, shapes: Sequence[Sequence[int]], dtypes: Sequence[object]) -> None:
        if len(shapes) != len(dtypes):
            raise ValueError("MemoryLayoutDesc: shapes and dtype must have the same length")
        object.__setattr__(self, "_shapes", [torch.Size(s) for s in shapes])
        object.__setattr__(self, "_dtypes", list(dtypes))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError("MemoryLayoutDesc is immutable")

    @property
    def shapes(self) -> list[torch.Size]:
        return list(self._shapes)

    @property
    def dtypes(self) -> list[object]:
        return list(self._dtypes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, MemoryLayoutDesc):
            return NotImplemented
        return self._shapes == other._shapes and self._dtypes == other._dtypes

    def __hash__(self) -> int:
        return hash((tuple(tuple(s) for s in self._shapes), tuple(str(d) for d in self._dtypes)))

    def __repr__(self) -> str:
        return f"MemoryLayoutDesc(shapes={self._shapes}, dtypes={self._dtypes})"
