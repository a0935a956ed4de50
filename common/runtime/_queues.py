"""Bounded queues between an instance's gateway and executor threads.

Bounded by bytes with high and low water marks: a producer that finds the
queue above the high mark waits until the consumer drains it below the low
mark (hysteresis keeps the two threads from ping-ponging).
"""

from __future__ import annotations

import threading
import time
from collections import deque


class ByteQueue:
    """A FIFO of byte frames bounded by total size. Thread-safe."""

    def __init__(self, high: int, low: int) -> None:
        self.high = high
        self.low = low
        self._items: deque[bytes] = deque()
        self._bytes = 0
        self._cond = threading.Condition()
        self._blocked = False
        self.blocked_s = 0.0  # total time producers spent waiting for room
        self._closed = False

    @property
    def nbytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def over_high(self) -> bool:
        return self._bytes >= self.high

    def put(self, item: bytes, block: bool = True) -> None:
        """Append; when ``block`` and the queue is above its high mark, wait for the low mark."""
        with self._cond:
            if block and self._bytes >= self.high and not self._closed:
                start = time.monotonic()
                self._blocked = True
                while self._bytes > self.low and not self._closed:
                    self._cond.wait(0.5)
                self._blocked = False
                self.blocked_s += time.monotonic() - start
            self._items.append(item)
            self._bytes += len(item)
            self._cond.notify_all()

    def get(self, timeout: float | None = None) -> bytes | None:
        """Pop the oldest frame, waiting up to ``timeout`` seconds; None when none came."""
        with self._cond:
            if not self._items:
                if self._closed or (timeout is not None and timeout <= 0):
                    return None
                self._cond.wait(timeout)
                if not self._items:
                    return None
            item = self._items.popleft()
            self._bytes -= len(item)
            if self._bytes <= self.low:
                self._cond.notify_all()
            return item

    def drain(self, max_bytes: int) -> list[bytes]:
        """Pop frames totalling about ``max_bytes`` (at least one when any are queued)."""
        out: list[bytes] = []
        with self._cond:
            taken = 0
            while self._items and (not out or taken < max_bytes):
                item = self._items.popleft()
                taken += len(item)
                out.append(item)
            self._bytes -= taken
            if out and self._bytes <= self.low:
                self._cond.notify_all()
        return out

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()
