"""Bitmap: LMCache's native Bitmap (csrc/storage_manager/bitmap), in Python.

Bit i lives in byte i // 8 at bit i % 8. set()/clear() past the end are ignored, test() past the
end is False; & and | give the smaller size; ~ masks off the bits past the end.
"""

from __future__ import annotations

from typing import Iterable


class Bitmap:
    __slots__ = ("_size", "_bits")

    def __init__(self, size: int, prefix_bits: int = 0) -> None:
        if size < 0:
            raise ValueError(f"Bitmap size must be >= 0 (got {size})")
        self._size = size
        self._bits = (1 << min(prefix_bits, size)) - 1 if prefix_bits > 0 else 0

    def size(self) -> int:
        return self._size

    def __len__(self) -> int:
        return self._size

    def set(self, i: int) -> None:
        if 0 <= i < self._size:
            self._bits |= 1 << i

    def clear(self, i: int) -> None:
        if 0 <= i < self._size:
            self._bits &= ~(1 << i)

    def test(self, i: int) -> bool:
        return 0 <= i < self._size and bool(self._bits >> i & 1)

    def popcount(self) -> int:
        return bin(self._bits).count("1")

    def count_leading_zeros(self) -> int:
        n = 0
        while n < self._size and not self.test(n):
            n += 1
        return n

    def count_leading_ones(self) -> int:
        n = 0
        while n < self._size and self.test(n):
            n += 1
        return n

    def batched_set(self, indices: Iterable[int]) -> None:
        for i in indices:
            self.set(i)

    def set_range(self, start: int, end: int) -> None:
        for i in range(max(start, 0), min(end, self._size)):
            self.set(i)

    def get_indices_list(self) -> list[int]:
        return [i for i in range(self._size) if self.test(i)]

    def get_indices_set(self) -> set[int]:
        return set(self.get_indices_list())

    def gather(self, items: list) -> list:
        return [items[i] for i in self.get_indices_list()]

    def highest_set_bit(self) -> int:
        return self._bits.bit_length() - 1 if self._bits else -1

    def _with(self, size: int, bits: int) -> "Bitmap":
        out = Bitmap(size)
        out._bits = bits & ((1 << size) - 1)
        return out

    def __and__(self, other: "Bitmap") -> "Bitmap":
        return self._with(min(self._size, other._size), self._bits & other._bits)

    def __or__(self, other: "Bitmap") -> "Bitmap":
        return self._with(min(self._size, other._size), self._bits | other._bits)

    def __invert__(self) -> "Bitmap":
        return self._with(self._size, ~self._bits)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Bitmap) and (self._size, self._bits) == (other._size, other._bits)

    def __repr__(self) -> str:
        return "".join("1" if self.test(i) else "0" for i in range(self._size))
