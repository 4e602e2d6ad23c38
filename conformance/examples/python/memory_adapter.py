"""A Python in-memory L2 adapter written to LMCache's adapter interface, LMCache's mock in shape.

Deep copies of each object's logical bytes, lock counts, no overwrite, a byte capacity (a store
that does not fit fails as a whole), one worker thread running tasks in submission order, and an
eventfd per task kind signalled once per completed task after its result is recorded.

    lmcache-conform --python conformance/examples/python/memory_adapter.py:make
"""

from __future__ import annotations

import queue
import threading

from lmcache_conformance import Bitmap, EventNotifier, L2AdapterInterface, L2StoreResult, declare


class MemoryL2Adapter(L2AdapterInterface):
    def __init__(self, max_capacity_bytes: int = 1 << 30) -> None:
        super().__init__(max_capacity_bytes)
        self._lock = threading.Lock()  # guards everything below
        self._objects: dict = {}  # key -> bytes
        self._lock_counts: dict = {}
        self._next_id = 0
        self._store_done: dict = {}
        self._lookup_done: dict = {}
        self._load_done: dict = {}
        self._store_fd = EventNotifier()
        self._lookup_fd = EventNotifier()
        self._load_fd = EventNotifier()
        self._tasks: queue.Queue = queue.Queue()
        self._closed = False
        self._worker = threading.Thread(target=self._run, name="memory-l2", daemon=True)
        self._worker.start()

    # --- fds ----------------------------------------------------------------------------------
    def get_store_event_fd(self) -> int:
        return self._store_fd.fileno()

    def get_lookup_and_lock_event_fd(self) -> int:
        return self._lookup_fd.fileno()

    def get_load_event_fd(self) -> int:
        return self._load_fd.fileno()

    # --- submits ------------------------------------------------------------------------------
    def _submit(self, kind: str, keys, objects=None) -> int:
        keys = list(keys)
        if objects is not None:
            objects = list(objects)
            if len(objects) != len(keys):
                raise ValueError(f"{len(keys)} keys, {len(objects)} objects")
        with self._lock:
            if self._closed:
                raise RuntimeError("the adapter is closed")
            task_id = self._next_id
            self._next_id += 1
            self._tasks.put((kind, task_id, keys, objects))
        return task_id

    def submit_store_task(self, keys, objects) -> int:
        return self._submit("store", keys, objects)

    def submit_lookup_and_lock_task(self, keys) -> int:
        return self._submit("lookup", keys)

    def submit_load_task(self, keys, objects) -> int:
        return self._submit("load", keys, objects)

    def submit_unlock(self, keys) -> None:
        with self._lock:
            if self._closed:
                raise RuntimeError("the adapter is closed")
            for key in keys:
                n = self._lock_counts.get(key, 0)
                if n <= 1:
                    self._lock_counts.pop(key, None)
                else:
                    self._lock_counts[key] = n - 1

    # --- results (one-shot) -------------------------------------------------------------------
    def pop_completed_store_tasks(self) -> dict:
        with self._lock:
            done, self._store_done = self._store_done, {}
        return done

    def query_lookup_and_lock_result(self, task_id):
        with self._lock:
            return self._lookup_done.pop(task_id, None)

    def query_load_result(self, task_id):
        with self._lock:
            return self._load_done.pop(task_id, None)

    # --- the worker ---------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            task = self._tasks.get()
            if task is None:
                return
            kind, task_id, keys, objects = task
            try:
                if kind == "store":
                    result = self._store(keys, objects)
                elif kind == "lookup":
                    result = self._lookup(keys)
                else:
                    result = self._load(keys, objects)
            except Exception:  # noqa: BLE001 - a failed task, never a dead worker
                result = L2StoreResult(False) if kind == "store" else Bitmap(len(keys))
            # The results dict is looked up under the lock: pop_completed_store_tasks() swaps
            # the store dict, and a result written into the one it took would be lost.
            with self._lock:
                {"store": self._store_done, "lookup": self._lookup_done, "load": self._load_done}[
                    kind
                ][task_id] = result
            {"store": self._store_fd, "lookup": self._lookup_fd, "load": self._load_fd}[kind].notify()

    def _store(self, keys, objects) -> L2StoreResult:
        fresh = {}
        with self._lock:
            for key, obj in zip(keys, objects):
                if key not in self._objects and key not in fresh:  # no overwrite; first wins
                    fresh[key] = obj
            needed = sum(obj.get_size() for obj in fresh.values())
            if self._bytes_used + needed > self._max_capacity_bytes:
                return L2StoreResult(False)
        copies = {key: bytes(obj.byte_array) for key, obj in fresh.items()}
        with self._lock:
            for key, data in copies.items():
                self._objects[key] = data
        sizes = [len(d) for d in copies.values()]
        self._notify_keys_stored(list(copies), sizes)
        return L2StoreResult(True, sum(sizes))

    def _lookup(self, keys) -> Bitmap:
        bits = Bitmap(len(keys))
        with self._lock:
            for i, key in enumerate(keys):
                if key in self._objects:
                    self._lock_counts[key] = self._lock_counts.get(key, 0) + 1
                    bits.set(i)
        return bits

    def _load(self, keys, objects) -> Bitmap:
        bits = Bitmap(len(keys))
        with self._lock:
            hits = [(i, self._objects.get(key)) for i, key in enumerate(keys)]
        accessed = []
        for i, data in hits:
            # Never past the caller's object: a key stored longer than it misses. A load sets
            # the object's size to the stored length, so that a variable-length frame reads right.
            if data is None or objects[i].get_physical_size() < len(data):
                continue
            objects[i].set_used_size(len(data))
            objects[i].byte_array[:] = data
            bits.set(i)
            accessed.append(keys[i])
        self._notify_keys_accessed(accessed)
        return bits

    # --- the rest -----------------------------------------------------------------------------
    def delete(self, keys) -> None:
        removed, sizes = [], []
        with self._lock:
            for key in keys:
                data = self._objects.pop(key, None)
                if data is not None:  # its lookup locks stay until unlocked
                    removed.append(key)
                    sizes.append(len(data))
        self._notify_keys_deleted(removed, sizes)

    def report_status(self) -> dict:
        with self._lock:
            locked = len(self._lock_counts)
        return {"is_healthy": True, "locked_key_count": locked}

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._tasks.put(None)  # queued tasks finish first, then the worker ends
        self._worker.join()
        self._store_fd.close()
        self._lookup_fd.close()
        self._load_fd.close()


@declare(reports_lock_count=True)
def make(max_capacity_bytes: int = 64 << 20):
    # The keyword lets the kit build it with a capacity of its choosing (CapacityHonoured).
    return MemoryL2Adapter(max_capacity_bytes=max_capacity_bytes)
