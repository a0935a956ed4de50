"""XOR-tree acking, as in Storm and Heron.

Every edge of a tuple tree gets a random 63-bit id. The spout's stmgr keeps,
per root, the XOR of every edge id seen: the spout reports the edges it
emitted, each bolt's ack reports its input edge XOR the edges it emitted
anchored to that input. Each edge enters the XOR twice, so the value returns
to zero exactly when the whole tree is processed, in constant memory per root.
"""

from __future__ import annotations

import time
from collections.abc import Callable


class XorTracker:
    """Pending tuple trees of the spouts of one stmgr, with timeouts.

    Roots expire in rotating buckets (Heron's RotatingMap): a root is failed
    between ``timeout`` and ``timeout * (1 + 1/buckets)`` after its emit.
    Not thread-safe: used from the stmgr's event loop only.
    """

    def __init__(
        self,
        timeout_s: float,
        buckets: int = 3,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock
        self._interval = timeout_s / buckets
        self._buckets: list[dict[tuple[int, int], int]] = [{} for _ in range(buckets + 1)]
        self._next_rotation = clock() + self._interval

    def __len__(self) -> int:
        return sum(len(b) for b in self._buckets)

    def add(self, task: int, root: int, xor: int) -> None:
        key = (task, root)
        for bucket in self._buckets:
            if key in bucket:
                bucket[key] ^= xor
                return
        self._buckets[0][key] = xor

    def ack(self, task: int, root: int, xor: int) -> bool:
        """Apply an ack; True when the tree of ``root`` just completed."""
        key = (task, root)
        for bucket in self._buckets:
            if key in bucket:
                value = bucket[key] ^ xor
                if value == 0:
                    del bucket[key]
                    return True
                bucket[key] = value
                return False
        return False  # unknown: already failed, timed out, or its spout restarted

    def fail(self, task: int, root: int) -> bool:
        """Drop ``root``; True when it was pending (so the spout must hear of it)."""
        key = (task, root)
        return any(bucket.pop(key, None) is not None for bucket in self._buckets)

    def forget_task(self, task: int) -> None:
        """A spout instance restarted: its roots are meaningless now."""
        for bucket in self._buckets:
            for key in [k for k in bucket if k[0] == task]:
                del bucket[key]

    def expire(self) -> list[tuple[int, int]]:
        """Rotate when due; return the (task, root) pairs that timed out."""
        expired: list[tuple[int, int]] = []
        now = self._clock()
        while now >= self._next_rotation:
            expired.extend(self._buckets.pop().keys())
            self._buckets.insert(0, {})
            self._next_rotation += self._interval
        return expired
