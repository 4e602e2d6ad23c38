"""Python mutants for the kit's self-test: each is a correct example with one realistic bug, and
each must make lmcache-conform --python fail (python_kit_test.sh). One file, one factory each."""

from __future__ import annotations

import dataclasses
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "examples", "python"))

import checksum_serde  # noqa: E402
import fp8_serde  # noqa: E402
import memory_adapter  # noqa: E402
from lmcache_conformance import AsyncSerdeProcessor, Bitmap, EventNotifier, declare  # noqa: E402

_E4M3 = {"type": "fp8", "fp8_dtype": "float8_e4m3fn"}


# --- serdes ---------------------------------------------------------------------------------------
class _TruncatingSerializer(fp8_serde.Fp8Serializer):
    """Drops the mantissa bits instead of rounding them (round toward zero)."""

    def encode(self, x):
        bits = x.contiguous().view(torch.int32)
        cut = bits & ~((1 << (23 - self._format["mant"])) - 1)
        return super().encode(cut.view(torch.float32))


@declare(mirrors=_E4M3)
def fp8_truncating():
    return _TruncatingSerializer(), fp8_serde.Fp8Deserializer()


class _GroupsAtZeroDeserializer(fp8_serde.Fp8Deserializer):
    """Reads every group from the frame's start (forgets the running offset)."""

    def deserialize(self, src, dst, key):
        codes = src.raw_data
        for i in range(dst.get_num_groups()):
            t = dst.get_tensor(i)
            n = t.numel()
            if n:
                t.view(-1).copy_(self._table[codes[:n].long()].to(t.dtype))


@declare(mirrors=_E4M3)
def fp8_groups_at_zero():
    return fp8_serde.Fp8Serializer(), _GroupsAtZeroDeserializer()


class _NoFingerprintDeserializer(checksum_serde.ChecksumDeserializer):
    """Checks the version and the hash, not which chunk the frame was stored for."""

    def same_chunk(self, fingerprint, key):
        return True


@declare(mirrors={"type": "checksum"})
def checksum_no_fingerprint():
    return checksum_serde.ChecksumSerializer(), _NoFingerprintDeserializer()


class _ShortHashSerializer(checksum_serde.ChecksumSerializer):
    """Hashes only the first 4 KiB of the payload (a sampled checksum)."""

    def serialize(self, src, dst, key):
        n = super().serialize(src, dst, key)
        out = dst.byte_array
        import xxhash

        out[9:17] = xxhash.xxh3_64(bytes(out[17 : 17 + 4096])).digest()
        return n


class _ShortHashDeserializer(checksum_serde.ChecksumDeserializer):
    def deserialize(self, src, dst, key):
        import xxhash

        n = dst.get_size()
        frame = src.byte_array
        if len(frame) < 17 + n:
            raise ValueError("checksum: truncated frame")
        if frame[0] != 1 or bytes(frame[1:9]) != checksum_serde._fingerprint(key):
            raise RuntimeError("checksum: bad header")
        if xxhash.xxh3_64(bytes(frame[17 : 17 + min(n, 4096)])).digest() != bytes(frame[9:17]):
            raise RuntimeError("checksum: payload hash mismatch")
        dst.byte_array[:] = frame[17 : 17 + n]


@declare(name="py_checksum_short_hash", mirrors={"type": "checksum"})
def checksum_short_hash():
    return _ShortHashSerializer(), _ShortHashDeserializer()


# --- processors ----------------------------------------------------------------------------------
class _ResultTwice(AsyncSerdeProcessor):
    """query_*_result() reads the result without taking it: it is given again and again."""

    def query_serialize_result(self, task_id):
        with self._lock:
            return self._serialize_results.get(task_id)

    def query_deserialize_result(self, task_id):
        with self._lock:
            return self._deserialize_results.get(task_id)


@declare(mirrors=_E4M3)
def async_result_twice():
    return _ResultTwice(fp8_serde.Fp8Serializer(), fp8_serde.Fp8Deserializer())


class _NoNarrow:
    """A dst without set_used_size(): the frame's length is lost (the temp keeps its estimate)."""

    def __init__(self, obj):
        self._obj = obj

    def __getattr__(self, name):
        if name == "set_used_size":
            raise AttributeError(name)
        return getattr(self._obj, name)


class _NotNarrowing(AsyncSerdeProcessor):
    def submit_serialize(self, srcs, dsts, keys):
        return super().submit_serialize(srcs, [_NoNarrow(d) for d in dsts], keys)


@declare(mirrors=_E4M3)
def async_not_narrowing():
    return _NotNarrowing(fp8_serde.Fp8Serializer(), fp8_serde.Fp8Deserializer())


class _OneFd(AsyncSerdeProcessor):
    """One event fd for both directions."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._deserialize_notifier.close()
        self._deserialize_notifier = self._serialize_notifier

    def close(self):
        self._deserialize_notifier = EventNotifier()
        super().close()


@declare(mirrors=_E4M3)
def async_one_fd():
    return _OneFd(fp8_serde.Fp8Serializer(), fp8_serde.Fp8Deserializer())


# --- adapters ------------------------------------------------------------------------------------
class _LookupWithoutLock(memory_adapter.MemoryL2Adapter):
    """Finds keys but takes no lock on them."""

    def _lookup(self, keys):
        bits = Bitmap(len(keys))
        with self._lock:
            for i, key in enumerate(keys):
                if key in self._objects:
                    bits.set(i)
        return bits


@declare(reports_lock_count=True)
def adapter_lookup_without_lock():
    return _LookupWithoutLock(64 << 20)


class _StoresPoppedTwice(memory_adapter.MemoryL2Adapter):
    """pop_completed_store_tasks() hands out the completed stores without forgetting them."""

    def pop_completed_store_tasks(self):
        with self._lock:
            return dict(self._store_done)


@declare(reports_lock_count=True)
def adapter_stores_popped_twice():
    return _StoresPoppedTwice(64 << 20)


class _UsageOfOneSalt(memory_adapter.MemoryL2Adapter):
    """Counts every byte under the empty cache_salt (usage per tenant lost)."""

    def _count(self, keys, sizes, sign):
        super()._count([dataclasses.replace(k, cache_salt="") for k in keys], sizes, sign)


@declare(reports_lock_count=True)
def adapter_usage_of_one_salt():
    return _UsageOfOneSalt(64 << 20)
