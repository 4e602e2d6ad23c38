"""A Python checksum serde written to LMCache's serde interfaces, over python3-xxhash.

Frame (docs/integrity.md, LMCache's `checksum`): [version 1][8-byte fingerprint: the first 8
bytes of key.chunk_hash, zero-padded][XXH3-64 of the payload, big-endian][payload: the object's
bytes as they are]. A truncated frame is a ValueError; any other failed check a RuntimeError.

    lmcache-conform --python conformance/examples/python/checksum_serde.py:make
"""

from __future__ import annotations

import xxhash

from lmcache_conformance import Deserializer, MemoryLayoutDesc, MemoryObj, ObjectKey, Serializer
from lmcache_conformance import declare
from lmcache_conformance.dtypes import element_size

_VERSION = 1
_HEADER = 1 + 8 + 8


def _fingerprint(key: ObjectKey) -> bytes:
    return bytes(key.chunk_hash[:8]).ljust(8, b"\0")


class ChecksumSerializer(Serializer):
    def serialize(self, src: MemoryObj, dst: MemoryObj, key: ObjectKey) -> int:
        payload = src.byte_array
        need = _HEADER + len(payload)
        if dst.get_size() < need:
            raise ValueError(f"checksum: destination buffer too small: got {dst.get_size()} bytes, need {need}")
        out = dst.byte_array
        out[0] = _VERSION
        out[1:9] = _fingerprint(key)
        out[9:17] = xxhash.xxh3_64(payload).digest()
        out[_HEADER:need] = payload
        return need

    def estimate_serialized_size(self, layout_desc: MemoryLayoutDesc) -> int:
        return _HEADER + sum(s.numel() * element_size(d) for s, d in zip(layout_desc.shapes, layout_desc.dtypes))


class ChecksumDeserializer(Deserializer):
    def deserialize(self, src: MemoryObj, dst: MemoryObj, key: ObjectKey) -> None:
        n = dst.get_size()
        frame = src.byte_array
        if len(frame) < _HEADER + n:
            raise ValueError(f"checksum: truncated frame: {len(frame)} bytes, need {_HEADER + n}")
        if frame[0] != _VERSION:
            raise RuntimeError(f"checksum: unknown frame version {frame[0]}")
        if not self.same_chunk(bytes(frame[1:9]), key):
            raise RuntimeError("checksum: the frame was stored for another chunk")
        payload = frame[_HEADER : _HEADER + n]
        if xxhash.xxh3_64(payload).digest() != bytes(frame[9:17]):
            raise RuntimeError("checksum: payload hash mismatch")
        dst.byte_array[:] = payload

    def same_chunk(self, fingerprint: bytes, key: ObjectKey) -> bool:
        return fingerprint == _fingerprint(key)


@declare(mirrors={"type": "checksum"})
def make():
    return ChecksumSerializer(), ChecksumDeserializer()
