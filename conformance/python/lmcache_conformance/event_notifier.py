"""EventNotifier: LMCache's binary, coalescing wake-up signal (lmcache.v1.platform.event_notifier).

An eventfd in counter mode: notify() adds 1, consume() reads the count back to 0 (any number of
notifies fold into one wake-up), fileno() is the fd to poll. close() is idempotent.
"""

from __future__ import annotations

import errno
import os


class EventNotifier:
    def __init__(self) -> None:
        self._fd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)

    def fileno(self) -> int:
        return self._fd

    def notify(self) -> None:
        os.eventfd_write(self._fd, 1)

    def consume(self) -> None:
        try:
            os.eventfd_read(self._fd)
        except OSError as e:
            if e.errno != errno.EAGAIN:
                raise

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
