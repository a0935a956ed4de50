"""headwater.common.runtime._queues: the byte-bounded queue with water marks."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from headwater.common.runtime._queues import ByteQueue

WAIT = 5.0  # generous upper bound; tests finish as soon as the event fires


def _wait_until(pred: Callable[[], bool], timeout: float = WAIT) -> bool:
    """Poll ``pred`` without sleeping the whole time (Event.wait as a short pause)."""
    pause = threading.Event()
    deadline = time.monotonic() + timeout
    while not pred():
        if time.monotonic() > deadline:
            return False
        pause.wait(0.001)
    return True


class Producer:
    """Runs ``q.put(item)`` in a thread; ``done`` is set once put returns."""

    def __init__(self, q: ByteQueue, item: bytes) -> None:
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(q, item), daemon=True)
        self.thread.start()

    def _run(self, q: ByteQueue, item: bytes) -> None:
        q.put(item)
        self.done.set()

    def join(self) -> None:
        self.thread.join(WAIT)
        assert not self.thread.is_alive()


def test_put_get_fifo_and_sizes() -> None:
    q = ByteQueue(high=100, low=50)
    assert len(q) == 0
    assert q.nbytes == 0
    q.put(b"one")
    q.put(b"three")
    assert len(q) == 2
    assert q.nbytes == 8
    assert q.get(timeout=0) == b"one"
    assert q.nbytes == 5
    assert q.get(timeout=0) == b"three"
    assert q.nbytes == 0
    assert len(q) == 0


def test_get_on_empty_queue_returns_none() -> None:
    q = ByteQueue(high=10, low=5)
    assert q.get(timeout=0) is None
    assert q.get(timeout=-1) is None


def test_get_waits_for_a_put() -> None:
    q = ByteQueue(high=10, low=5)
    got: list[bytes | None] = []
    done = threading.Event()

    def consume() -> None:
        got.append(q.get(timeout=WAIT))
        done.set()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    q.put(b"hi")
    assert done.wait(WAIT)
    t.join(WAIT)
    assert got == [b"hi"]


def test_drain_takes_about_max_bytes() -> None:
    q = ByteQueue(high=1000, low=500)
    for i in range(5):
        q.put(bytes([i]) * 3)
    # takes frames until at least max_bytes are taken
    assert q.drain(7) == [b"\x00" * 3, b"\x01" * 3, b"\x02" * 3]
    assert q.nbytes == 6
    assert len(q) == 2
    assert q.drain(1000) == [b"\x03" * 3, b"\x04" * 3]
    assert q.nbytes == 0
    assert q.drain(1000) == []


def test_drain_takes_at_least_one_frame() -> None:
    q = ByteQueue(high=1000, low=500)
    q.put(b"x" * 50)
    q.put(b"y")
    assert q.drain(0) == [b"x" * 50]
    assert q.drain(1) == [b"y"]


def test_over_high() -> None:
    q = ByteQueue(high=10, low=4)
    q.put(b"x" * 9)
    assert not q.over_high()
    q.put(b"x")
    assert q.over_high()


def test_non_blocking_put_never_waits() -> None:
    q = ByteQueue(high=4, low=2)
    for _ in range(5):
        q.put(b"xxxx", block=False)
    assert q.nbytes == 20
    assert q.blocked_s == 0.0


def test_put_below_high_does_not_block() -> None:
    q = ByteQueue(high=10, low=4)
    q.put(b"x" * 9, block=False)
    p = Producer(q, b"y")  # 9 < high: goes straight in
    assert p.done.wait(WAIT)
    p.join()
    assert q.nbytes == 10


def test_put_blocks_above_high_until_drained_below_low() -> None:
    q = ByteQueue(high=10, low=4)
    for _ in range(5):
        q.put(b"ab", block=False)  # 10 bytes: at the high mark
    p = Producer(q, b"Z")
    assert _wait_until(lambda: q._blocked), "producer never blocked"
    assert not p.done.is_set()

    assert q.get(timeout=0) == b"ab"  # 8 bytes: below high but above low
    assert not p.done.wait(0.05)
    assert q.drain(1) == [b"ab"]  # 6 bytes: still above low
    assert not p.done.wait(0.05)
    assert len(q) == 3

    assert q.get(timeout=0) == b"ab"  # 4 bytes: at the low mark, producer resumes
    assert p.done.wait(WAIT)
    p.join()
    assert q.nbytes == 5
    assert q.drain(100) == [b"ab", b"ab", b"Z"]
    assert q.blocked_s > 0.0
    assert not q._blocked


def test_consumer_thread_unblocks_a_producer() -> None:
    q = ByteQueue(high=8, low=2)
    q.put(b"x" * 8, block=False)
    p = Producer(q, b"y")
    assert _wait_until(lambda: q._blocked)
    taken: list[bytes] = []

    def consume() -> None:
        taken.extend(q.drain(100))

    c = threading.Thread(target=consume, daemon=True)
    c.start()
    assert p.done.wait(WAIT)
    c.join(WAIT)
    p.join()
    assert taken == [b"x" * 8]
    assert q.drain(100) == [b"y"]


def test_close_unblocks_a_blocked_producer() -> None:
    q = ByteQueue(high=4, low=2)
    q.put(b"full", block=False)
    p = Producer(q, b"more")
    assert _wait_until(lambda: q._blocked)
    assert not p.done.is_set()
    q.close()
    assert p.done.wait(WAIT)
    p.join()
    assert q.nbytes == 8  # the put completes (it is not lost)


def test_put_after_close_does_not_block() -> None:
    q = ByteQueue(high=4, low=2)
    q.close()
    q.put(b"full")
    q.put(b"more")  # above high, but closed: returns at once
    assert len(q) == 2


def test_close_wakes_a_waiting_consumer() -> None:
    q = ByteQueue(high=10, low=5)
    got: list[bytes | None] = [b"sentinel"]
    done = threading.Event()
    started = threading.Event()

    def consume() -> None:
        started.set()
        got[0] = q.get(timeout=None)
        done.set()

    t = threading.Thread(target=consume, daemon=True)
    t.start()
    assert started.wait(WAIT)
    assert _wait_until(lambda: bool(q._cond._waiters))  # type: ignore[attr-defined]
    q.close()
    assert done.wait(WAIT)
    t.join(WAIT)
    assert got == [None]
