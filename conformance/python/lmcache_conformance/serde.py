"""The serde interfaces with LMCache's names and signatures (lmcache.v1.distributed.serde).

A vendor implements Serializer / Deserializer (a pure byte transform) and usually wraps the pair in
AsyncSerdeProcessor, which adds the worker pool and the two event fds, as LMCache's does.
"""

from __future__ import annotations

import abc
import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Optional, Sequence

from .api import MemoryLayoutDesc, ObjectKey
from .event_notifier import EventNotifier
from .memory_obj import MemoryObj

SerdeTaskId = int

_log = logging.getLogger("lmcache_conformance.serde")


class Serializer(abc.ABC):
    @abc.abstractmethod
    def serialize(self, src: MemoryObj, dst: MemoryObj, key: ObjectKey) -> int:
        """Writes src's serialized form into dst's bytes; returns the bytes written."""

    @abc.abstractmethod
    def estimate_serialized_size(self, layout_desc: MemoryLayoutDesc) -> int:
        """An upper bound of serialize()'s output for any object of this layout (layout only)."""


class Deserializer(abc.ABC):
    @abc.abstractmethod
    def deserialize(self, src: MemoryObj, dst: MemoryObj, key: ObjectKey) -> None:
        """Reads src.get_size() serialized bytes and fills dst, which has the right layout."""


class SerdeProcessor(abc.ABC):
    @abc.abstractmethod
    def submit_serialize(
        self, srcs: Sequence[MemoryObj], dsts: Sequence[MemoryObj], keys: Sequence[ObjectKey]
    ) -> SerdeTaskId: ...

    @abc.abstractmethod
    def query_serialize_result(self, task_id: SerdeTaskId) -> Optional[bool]: ...

    @abc.abstractmethod
    def get_serialize_event_fd(self) -> int: ...

    @abc.abstractmethod
    def submit_deserialize(
        self, srcs: Sequence[MemoryObj], dsts: Sequence[MemoryObj], keys: Sequence[ObjectKey]
    ) -> SerdeTaskId: ...

    @abc.abstractmethod
    def query_deserialize_result(self, task_id: SerdeTaskId) -> Optional[bool]: ...

    @abc.abstractmethod
    def get_deserialize_event_fd(self) -> int: ...

    @abc.abstractmethod
    def estimate_serialized_size(self, layout_desc: MemoryLayoutDesc) -> int: ...

    @abc.abstractmethod
    def close(self) -> None: ...


class AsyncSerdeProcessor(SerdeProcessor):
    """A Serializer / Deserializer pair on a pool of `max_workers` threads, as LMCache's.

    One task id counter for both directions; a task's pairs run in order and the first exception
    ends it with False; dst.set_used_size(n) after each serialize; the result is stored, then the
    direction's fd notified once. close() waits for queued tasks, then closes the fds.
    """

    def __init__(
        self,
        serializer: Serializer,
        deserializer: Deserializer,
        max_workers: int = 1,
        serde_type: str = "unknown",
    ) -> None:
        if max_workers < 1:
            raise ValueError(f"max_workers must be >= 1 (got {max_workers})")
        self.serializer = serializer
        self.deserializer = deserializer
        self.serde_type = serde_type
        self._lock = threading.Lock()
        self._next_id = 0
        self._serialize_results: dict[int, bool] = {}
        self._deserialize_results: dict[int, bool] = {}
        self._serialize_notifier = EventNotifier()
        self._deserialize_notifier = EventNotifier()
        self._pool = ThreadPoolExecutor(max_workers=max_workers, thread_name_prefix="serde")
        self._closed = False

    def _take_id(self) -> int:
        with self._lock:
            task_id = self._next_id
            self._next_id += 1
            return task_id

    @staticmethod
    def _check_batch(srcs, dsts, keys) -> None:
        # Refused at submit, before anything runs (the kit's contract, docs/python.md; LMCache's
        # own finds the mismatch only when zip() runs out, after the earlier pairs ran).
        if not len(srcs) == len(dsts) == len(keys):
            raise ValueError(
                f"batch lengths differ: {len(srcs)} srcs, {len(dsts)} dsts, {len(keys)} keys"
            )

    def submit_serialize(self, srcs, dsts, keys) -> SerdeTaskId:
        self._check_batch(srcs, dsts, keys)
        task_id = self._take_id()
        self._pool.submit(self._run, task_id, True, list(srcs), list(dsts), list(keys))
        return task_id

    def submit_deserialize(self, srcs, dsts, keys) -> SerdeTaskId:
        self._check_batch(srcs, dsts, keys)
        task_id = self._take_id()
        self._pool.submit(self._run, task_id, False, list(srcs), list(dsts), list(keys))
        return task_id

    def _run(self, task_id: int, serialize: bool, srcs, dsts, keys) -> None:
        ok = True
        try:
            for src, dst, key in zip(srcs, dsts, keys, strict=True):
                if serialize:
                    n = self.serializer.serialize(src, dst, key)
                    if isinstance(n, int) and hasattr(dst, "set_used_size"):
                        dst.set_used_size(n)
                else:
                    self.deserializer.deserialize(src, dst, key)
        except Exception:  # noqa: BLE001 - a failed task reports False, as LMCache's
            _log.exception("serde task %d failed", task_id)
            ok = False
        with self._lock:
            (self._serialize_results if serialize else self._deserialize_results)[task_id] = ok
        try:
            (self._serialize_notifier if serialize else self._deserialize_notifier).notify()
        except OSError:
            _log.exception("notify failed")

    def query_serialize_result(self, task_id: SerdeTaskId) -> Optional[bool]:
        with self._lock:
            return self._serialize_results.pop(task_id, None)

    def query_deserialize_result(self, task_id: SerdeTaskId) -> Optional[bool]:
        with self._lock:
            return self._deserialize_results.pop(task_id, None)

    def get_serialize_event_fd(self) -> int:
        return self._serialize_notifier.fileno()

    def get_deserialize_event_fd(self) -> int:
        return self._deserialize_notifier.fileno()

    def estimate_serialized_size(self, layout_desc: MemoryLayoutDesc) -> int:
        return self.serializer.estimate_serialized_size(layout_desc)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True)
        self._serialize_notifier.close()
        self._deserialize_notifier.close()
