"""The example adapter's one-shot results under racing pops (python_kit_test.sh runs it).

A store's result must reach exactly one pop_completed_store_tasks() however the worker's
recording interleaves with pops on other threads: a tiny switch interval makes the interpreter
switch threads between almost every bytecode, and a popper thread pops without pause.

    python3 conformance/examples/python/memory_adapter_test.py
"""

from __future__ import annotations

import os
import sys
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, HERE)

import torch  # noqa: E402

from lmcache_conformance import MemoryLayoutDesc, ObjectKey, allocate  # noqa: E402
from memory_adapter import MemoryL2Adapter  # noqa: E402

STORES = 400
DEADLINE_S = 20.0


class RacingPopsTest(unittest.TestCase):
    def setUp(self) -> None:
        self._interval = sys.getswitchinterval()
        sys.setswitchinterval(1e-6)

    def tearDown(self) -> None:
        sys.setswitchinterval(self._interval)

    def test_every_store_result_reaches_exactly_one_pop(self) -> None:
        adapter = MemoryL2Adapter(max_capacity_bytes=1 << 24)
        layout = MemoryLayoutDesc([[8]], [torch.uint8])
        seen: dict = {}
        duplicates: list = []
        lock = threading.Lock()
        stop = threading.Event()

        def pop_into_seen() -> None:
            for task_id, result in adapter.pop_completed_store_tasks().items():
                with lock:
                    if task_id in seen:
                        duplicates.append(task_id)
                    seen[task_id] = result

        def popper() -> None:
            while not stop.is_set():
                pop_into_seen()

        thread = threading.Thread(target=popper)
        thread.start()
        try:
            ids = []
            for i in range(STORES):
                key = ObjectKey(chunk_hash=i.to_bytes(8, "little") * 4, model_name="m", kv_rank=0,
                                object_group_id=0, cache_salt="")
                ids.append(adapter.submit_store_task([key], [allocate(layout)]))
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                with lock:
                    if all(i in seen for i in ids):
                        break
                time.sleep(0.01)
        finally:
            stop.set()
            thread.join()
            pop_into_seen()
            adapter.close()
        lost = [i for i in ids if i not in seen]
        self.assertEqual(lost, [], f"{len(lost)} of {STORES} store results never reached a pop")
        self.assertEqual(duplicates, [], "results handed out twice")
        self.assertTrue(all(seen[i].is_successful() for i in ids))


if __name__ == "__main__":
    unittest.main()
