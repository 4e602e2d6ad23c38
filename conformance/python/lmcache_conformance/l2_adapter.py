"""The L2 adapter interface with LMCache's names (lmcache.v1.distributed.l2_adapters.base and
internal_api): L2StoreResult, AdapterUsage, L2AdapterListener, L2AdapterInterface with its usage
and listener helpers (_notify_keys_stored / _notify_keys_deleted / _notify_keys_accessed)."""

from __future__ import annotations

import abc
import dataclasses
import logging
import threading
import types
from typing import Mapping, Optional, Sequence

from .api import ObjectKey
from .bitmap import Bitmap
from .memory_obj import MemoryObj

L2TaskId = int

_log = logging.getLogger("lmcache_conformance.l2_adapter")


class L2StoreResult(int):
    """An int: the bytes transferred on success, -1 on failure (LMCache's)."""

    def __new__(cls, success: bool, bytes_transferred: int = 0) -> "L2StoreResult":
        if bytes_transferred < 0:
            raise ValueError(f"bytes_transferred must be >= 0, got {bytes_transferred}")
        return super().__new__(cls, bytes_transferred if success else -1)

    def is_successful(self) -> bool:
        return int(self) >= 0

    def bytes_transferred(self) -> int:
        return max(int(self), 0)


@dataclasses.dataclass(frozen=True)
class AdapterUsage:
    total_bytes_used: int
    total_capacity_bytes: int
    bytes_by_cache_salt: Mapping[str, int]

    @property
    def usage_fraction(self) -> float:
        if self.total_capacity_bytes <= 0:
            return -1.0
        return self.total_bytes_used / self.total_capacity_bytes


class L2AdapterListener(abc.ABC):
    @abc.abstractmethod
    def on_l2_keys_stored(self, keys: Sequence[ObjectKey], sizes: Sequence[int]) -> None: ...

    @abc.abstractmethod
    def on_l2_keys_accessed(self, keys: Sequence[ObjectKey]) -> None: ...

    @abc.abstractmethod
    def on_l2_keys_deleted(self, keys: Sequence[ObjectKey], sizes: Optional[Sequence[int]] = None) -> None: ...


class L2AdapterInterface(abc.ABC):
    """LMCache's adapter base: the abstract task API plus usage accounting and listeners."""

    def __init__(self, max_capacity_bytes: int = 0) -> None:
        self._max_capacity_bytes = max_capacity_bytes
        self._usage_lock = threading.Lock()
        self._bytes_used = 0
        self._bytes_by_salt: dict[str, int] = {}
        self._listeners: list[L2AdapterListener] = []

    # --- the task API -------------------------------------------------------------------------
    @abc.abstractmethod
    def get_store_event_fd(self) -> int: ...

    @abc.abstractmethod
    def get_lookup_and_lock_event_fd(self) -> int: ...

    @abc.abstractmethod
    def get_load_event_fd(self) -> int: ...

    @abc.abstractmethod
    def submit_store_task(self, keys: Sequence[ObjectKey], objects: Sequence[MemoryObj]) -> L2TaskId: ...

    @abc.abstractmethod
    def pop_completed_store_tasks(self) -> dict[L2TaskId, L2StoreResult]: ...

    @abc.abstractmethod
    def submit_lookup_and_lock_task(self, keys: Sequence[ObjectKey]) -> L2TaskId: ...

    @abc.abstractmethod
    def query_lookup_and_lock_result(self, task_id: L2TaskId) -> Optional[Bitmap]: ...

    @abc.abstractmethod
    def submit_unlock(self, keys: Sequence[ObjectKey]) -> None: ...

    @abc.abstractmethod
    def submit_load_task(self, keys: Sequence[ObjectKey], objects: Sequence[MemoryObj]) -> L2TaskId: ...

    @abc.abstractmethod
    def query_load_result(self, task_id: L2TaskId) -> Optional[Bitmap]: ...

    @abc.abstractmethod
    def close(self) -> None: ...

    # --- defaults -----------------------------------------------------------------------------
    def delete(self, keys: Sequence[ObjectKey]) -> None:
        """Does nothing by default (LMCache's)."""

    def supports_global_eviction(self) -> bool:
        return self._max_capacity_bytes > 0

    def get_usage(self) -> AdapterUsage:
        with self._usage_lock:
            return AdapterUsage(self._bytes_used, self._max_capacity_bytes,
                                types.MappingProxyType(dict(self._bytes_by_salt)))

    def register_listener(self, listener: L2AdapterListener) -> None:
        self._listeners.append(listener)

    def report_status(self) -> dict:
        return {"is_healthy": True}

    # --- helpers for implementations ----------------------------------------------------------
    def _count(self, keys: Sequence[ObjectKey], sizes: Sequence[int], sign: int) -> None:
        with self._usage_lock:
            for key, size in zip(keys, sizes):
                self._bytes_used = max(self._bytes_used + sign * size, 0)
                left = self._bytes_by_salt.get(key.cache_salt, 0) + sign * size
                if left > 0:
                    self._bytes_by_salt[key.cache_salt] = left
                else:
                    self._bytes_by_salt.pop(key.cache_salt, None)

    def _notify_keys_stored(self, keys: Sequence[ObjectKey], sizes: Sequence[int]) -> None:
        """Counts the bytes, then tells the listeners (outside the usage lock)."""
        self._count(keys, sizes, +1)
        if keys:
            for listener in list(self._listeners):
                listener.on_l2_keys_stored(list(keys), list(sizes))

    def _notify_keys_deleted(self, keys: Sequence[ObjectKey], sizes: Sequence[int]) -> None:
        self._count(keys, sizes, -1)
        if keys:
            for listener in list(self._listeners):
                listener.on_l2_keys_deleted(list(keys), list(sizes))

    def _notify_keys_accessed(self, keys: Sequence[ObjectKey]) -> None:
        if keys:
            for listener in list(self._listeners):
                listener.on_l2_keys_accessed(list(keys))
