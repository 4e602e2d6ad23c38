"""MemoryObj: an object's bytes and their layout, with the subset of LMCache's MemoryObj that serdes
and adapters touch (docs/python.md).

The bytes live in a writable buffer the object does not own: under the kit, a view of the kit's
own buffer (no copy per call), valid only during the call that received it (for a processor or an
adapter, until its task completes). Tensors are views of that buffer.
"""

from __future__ import annotations

import math
from typing import Callable, Optional

import torch

from .api import MemoryLayoutDesc
from .dtypes import element_size, storage_dtype


def _view(buffer: memoryview, dtype: torch.dtype, count: int, offset: int, shape) -> torch.Tensor:
    if count == 0:
        return torch.empty(shape, dtype=dtype)
    return torch.frombuffer(buffer, dtype=dtype, count=count, offset=offset).view(shape)


class MemoryObj:
    """LMCache's MemoryObj over a writable buffer (memoryview, bytearray, numpy array...)."""

    def __init__(
        self,
        buffer,
        layout: MemoryLayoutDesc,
        used_size: Optional[int] = None,
        on_set_used_size: Optional[Callable[[int], None]] = None,
    ) -> None:
        self._buffer = memoryview(buffer).cast("B")
        if self._buffer.readonly:
            raise ValueError("MemoryObj needs a writable buffer")
        self._layout = layout
        self._offsets = [0]
        self._counts = []
        for shape, dtype in zip(layout.shapes, layout.dtypes):
            n = math.prod(shape)
            self._counts.append(n)
            self._offsets.append(self._offsets[-1] + n * element_size(dtype))
        if self._offsets[-1] > len(self._buffer):
            raise ValueError(
                f"MemoryObj: layout needs {self._offsets[-1]} bytes, buffer holds {len(self._buffer)}"
            )
        self._used: Optional[int] = None
        if used_size is not None and used_size != self._offsets[-1]:
            self._check_used(used_size)
            self._used = used_size
        self._on_set_used_size = on_set_used_size

    # --- layout -------------------------------------------------------------------------------
    @property
    def layout(self) -> MemoryLayoutDesc:
        return self._layout

    def get_shapes(self) -> list[torch.Size]:
        return self._layout.shapes

    def get_dtypes(self) -> list[object]:
        return self._layout.dtypes

    def get_shape(self) -> torch.Size:
        return self._single_group("get_shape")[0]

    def get_dtype(self) -> object:
        return self._single_group("get_dtype")[1]

    def get_num_groups(self) -> int:
        return len(self._counts)

    # --- sizes --------------------------------------------------------------------------------
    def get_size(self) -> int:
        """The logical size in bytes: the layout's, or what set_used_size() set."""
        return self._offsets[-1] if self._used is None else self._used

    def get_physical_size(self) -> int:
        return len(self._buffer)

    def set_used_size(self, n: int) -> None:
        """Narrows the logical size to n bytes (0 <= n <= physical size), as LMCache's does."""
        self._check_used(n)
        if self._on_set_used_size is not None:
            self._on_set_used_size(int(n))
        self._used = int(n)

    def _check_used(self, n: int) -> None:
        if not isinstance(n, int) or n < 0 or n > len(self._buffer):
            raise ValueError(f"set_used_size: n={n} out of range [0, {len(self._buffer)}]")

    # --- views --------------------------------------------------------------------------------
    @property
    def tensor(self) -> Optional[torch.Tensor]:
        """Group 0 shaped and typed; the flat uint8 view of the used bytes once narrowed.

        Raises RuntimeError for an object of several groups (use get_tensor(i)), as LMCache's."""
        if self._used is not None:
            return _view(self._buffer, torch.uint8, self._used, 0, (self._used,))
        if len(self._counts) != 1:
            raise RuntimeError(
                f"MemoryObj.tensor is invalid for an object of {len(self._counts)} groups; use get_tensor(i)"
            )
        return self.get_tensor(0)

    def get_tensor(self, i: int) -> torch.Tensor:
        """Group i as a view of its bytes, shaped and typed (a float8 group as uint8)."""
        if not 0 <= i < len(self._counts):
            raise IndexError(f"group index {i} out of range [0, {len(self._counts)})")
        dtype = storage_dtype(self._layout.dtypes[i])
        return _view(self._buffer, dtype, self._counts[i], self._offsets[i], self._layout.shapes[i])

    @property
    def raw_data(self) -> torch.Tensor:
        """Every physical byte, flat uint8."""
        n = len(self._buffer)
        return _view(self._buffer, torch.uint8, n, 0, (n,))

    @property
    def byte_array(self) -> memoryview:
        """The logical bytes (get_size() of them), zero-copy."""
        return self._buffer[: self.get_size()]

    def _single_group(self, what: str):
        if len(self._counts) != 1:
            raise RuntimeError(f"MemoryObj.{what} is invalid for an object of {len(self._counts)} groups")
        return self._layout.shapes[0], self._layout.dtypes[0]

    def __repr__(self) -> str:
        return f"MemoryObj(layout={self._layout}, size={self.get_size()}, physical={len(self._buffer)})"


def allocate(layout: MemoryLayoutDesc, physical_size: Optional[int] = None) -> MemoryObj:
    """A zeroed object of `layout` over a bytearray of its own (for a vendor's own tests)."""
    need = sum(math.prod(s) * element_size(d) for s, d in zip(layout.shapes, layout.dtypes))
    return MemoryObj(bytearray(max(need, physical_size or 0)), layout)
