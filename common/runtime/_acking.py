"""XOR-tree acking, as in Storm and Heron.

Every edge of a tuple tree gets a random 63-bit id. The spout's stmgr keeps,
per root, the XOR of every edge id seen: the spout reports the edges it
emitted, each bolt's ack reports its input edge XOR the edges it emitted
anchored to that input. Each edge enters the XOR twice, so the value returns
to zero exactly when the whole tree is processed, in constant memory per root.

``SpoutAcks`` is the stream manager's side: it feeds the tracker from the
frames of its spouts (``ROOTS``) and of the bolts' acks (``ACK``, ``FAIL``),
and tells each spout, in batches, which of its trees completed or failed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Container

from ..wire import Kind, decode, encode, encode_frame
from ..wire._frame import STMGR, frame_payload


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


class SpoutAcks:
    """Pending trees of this stmgr's spouts, fed by frames; completions go out batched.

    ``deliver(task, frame)`` sends an ``ACKED``/``FAILED`` frame to a spout,
    which it does only while ``connected`` holds the task. Used from the
    stmgr's event loop only; the flush runs soon after the frames that
    completed trees, so one flush covers a whole read.
    """

    def __init__(
        self,
        timeout_s: float,
        deliver: Callable[[int, bytes], None],
        connected: Container[int],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._timeout_s = timeout_s
        self._deliver = deliver
        self._connected = connected
        self._clock = clock
        self.tracker = XorTracker(timeout_s, clock=clock)
        self._acked: dict[int, list[int]] = {}
        self._failed: dict[int, list[int]] = {}
        self._flush_scheduled = False

    def __len__(self) -> int:
        return len(self.tracker)

    def add_roots(self, task: int, frame: bytes) -> None:
        """A spout's ``ROOTS`` frame: flat [root, xor of its edges, ...]."""
        flat = decode(frame_payload(frame))
        add = self.tracker.add
        for i in range(0, len(flat), 2):
            add(task, flat[i], flat[i + 1])

    def apply(self, kind: int, spout_task: int, frame: bytes) -> None:
        """An ``ACK`` (flat [root, xor, ...]) or ``FAIL`` (flat [root, ...]) frame."""
        flat = decode(frame_payload(frame))
        if kind == Kind.ACK:
            ack = self.tracker.ack
            done = [
                flat[i] for i in range(0, len(flat), 2) if ack(spout_task, flat[i], flat[i + 1])
            ]
            if done:
                self._acked.setdefault(spout_task, []).extend(done)
        else:
            fail = self.tracker.fail
            done = [root for root in flat if fail(spout_task, root)]
            if done:
                self._failed.setdefault(spout_task, []).extend(done)
        if done and not self._flush_scheduled:
            self._flush_scheduled = True
            import asyncio  # here: instances import this module and never run a loop

            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        self._flush_scheduled = False
        for kind, pending in ((Kind.ACKED, self._acked), (Kind.FAILED, self._failed)):
            for task, roots in pending.items():
                if task in self._connected:
                    self._deliver(
                        task, encode_frame(kind, task, STMGR, len(roots), b"", encode(roots))
                    )
            pending.clear()

    def expire(self) -> None:
        """Fail the trees that timed out (the container calls this a few times a timeout)."""
        for task, root in self.tracker.expire():
            self._failed.setdefault(task, []).append(root)
        if self._failed:
            self.flush()

    def forget_task(self, task: int) -> None:
        """A spout instance went away: its trees are meaningless now."""
        self.tracker.forget_task(task)

    def reset(self) -> None:
        """A rollback: forget every tree."""
        self.tracker = XorTracker(self._timeout_s, clock=self._clock)
        self._acked.clear()
        self._failed.clear()
