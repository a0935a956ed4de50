"""headwater.common.runtime._acking: XorTracker with an injected clock."""

from __future__ import annotations

import itertools

import pytest

from headwater.common.runtime import XorTracker
from headwater.testing import ManualClock

# distinct edge ids; no subset of them XORs to zero
E1, E2, E3, E4 = 0x1111_0000_0001, 0x2222_0000_0010, 0x4444_0000_0100, 0x0888_0000_1000


def _tracker(timeout: float = 30.0, clock: ManualClock | None = None) -> XorTracker:
    return XorTracker(timeout, clock=(clock or ManualClock(0.0)).monotonic)


def test_single_edge_tree() -> None:
    t = _tracker()
    t.add(1, 7, E1)
    assert len(t) == 1
    assert t.ack(1, 7, E1) is True
    assert len(t) == 0


def test_tree_completes_only_after_every_edge() -> None:
    # spout emits E1 (to bolt A) and E2 (to bolt B); A emits E3 anchored to E1,
    # B emits E4 anchored to E2; C acks E3 and E4.
    acks = [E1 ^ E3, E2 ^ E4, E3, E4]
    for order in itertools.permutations(acks):
        t = _tracker()
        t.add(1, 7, E1 ^ E2)
        results = [t.ack(1, 7, x) for x in order]
        assert results == [False, False, False, True], order
        assert len(t) == 0


def test_roots_reported_in_several_adds() -> None:
    t = _tracker()
    t.add(1, 7, E1)
    t.add(1, 7, E2)  # the same root emitted to a second destination
    assert len(t) == 1
    assert t.ack(1, 7, E2) is False
    assert t.ack(1, 7, E1) is True


def test_roots_are_keyed_by_task_and_root() -> None:
    t = _tracker()
    t.add(1, 7, E1)
    t.add(2, 7, E2)
    assert len(t) == 2
    assert t.ack(2, 7, E1) is False
    assert t.ack(1, 7, E1) is True
    assert t.ack(2, 7, E1 ^ E2) is True
    assert len(t) == 0


def test_ack_of_unknown_root() -> None:
    t = _tracker()
    assert t.ack(1, 99, E1) is False
    assert len(t) == 0


def test_completed_tree_is_forgotten() -> None:
    t = _tracker()
    t.add(1, 7, E1)
    assert t.ack(1, 7, E1) is True
    assert t.ack(1, 7, E1) is False
    assert t.fail(1, 7) is False


def test_fail_drops_the_tree() -> None:
    t = _tracker()
    t.add(1, 7, E1 ^ E2)
    assert t.ack(1, 7, E1) is False
    assert t.fail(1, 7) is True
    assert len(t) == 0
    assert t.ack(1, 7, E2) is False  # late acks do not resurrect it
    assert t.fail(1, 7) is False


def test_fail_of_unknown_root() -> None:
    assert _tracker().fail(1, 7) is False


def test_expire_fails_roots_after_the_timeout() -> None:
    clock = ManualClock(0.0)
    t = _tracker(timeout=3.0, clock=clock)
    t.add(1, 7, E1)
    clock.advance_to(2.999)
    assert t.expire() == []
    clock.advance_to(4.0)  # timeout * (1 + 1/buckets)
    assert t.expire() == [(1, 7)]
    assert len(t) == 0
    assert t.ack(1, 7, E1) is False


def test_expire_keeps_roots_that_complete_in_time() -> None:
    clock = ManualClock(0.0)
    t = _tracker(timeout=3.0, clock=clock)
    t.add(1, 7, E1)
    t.add(1, 8, E2)
    clock.advance_to(2.0)
    assert t.expire() == []
    assert t.ack(1, 7, E1) is True
    clock.advance_to(10.0)
    assert t.expire() == [(1, 8)]


@pytest.mark.parametrize("buckets", [1, 2, 3, 5])
def test_expiry_window(buckets: int) -> None:
    """A root fails between timeout and timeout * (1 + 1/buckets) after its add."""
    timeout = 4.0
    step = 0.125
    clock = ManualClock(0.0)
    t = XorTracker(timeout, buckets=buckets, clock=clock.monotonic)
    added: dict[int, float] = {}
    expired_at: dict[int, float] = {}
    for i in range(200):
        clock.advance_to(i * step)
        for _task, root in t.expire():
            expired_at[root] = clock.monotonic()
        if i < 80:
            t.add(1, i, E1)
            added[i] = clock.monotonic()
    assert set(expired_at) == set(added)
    for root, at in added.items():
        lived = expired_at[root] - at
        assert timeout <= lived <= timeout * (1 + 1 / buckets) + step, (root, lived)


def test_expire_is_lazy_and_catches_up() -> None:
    clock = ManualClock(0.0)
    t = _tracker(timeout=3.0, clock=clock)
    t.add(1, 1, E1)
    t.add(2, 2, E2)
    clock.advance_to(100.0)
    assert sorted(t.expire()) == [(1, 1), (2, 2)]
    assert t.expire() == []


def test_ack_finds_roots_in_older_buckets() -> None:
    clock = ManualClock(0.0)
    t = _tracker(timeout=3.0, clock=clock)
    t.add(1, 7, E1 ^ E2)
    clock.advance_to(1.0)
    assert t.expire() == []
    assert t.ack(1, 7, E1) is False
    clock.advance_to(2.0)
    assert t.expire() == []
    t.add(1, 7, E3)  # a later add for the same root lands in its existing bucket
    assert len(t) == 1
    assert t.ack(1, 7, E2 ^ E3) is True


def test_forget_task_drops_only_that_tasks_roots() -> None:
    clock = ManualClock(0.0)
    t = _tracker(timeout=3.0, clock=clock)
    t.add(1, 7, E1)
    clock.advance_to(1.5)
    t.expire()
    t.add(1, 8, E2)
    t.add(2, 7, E3)
    assert len(t) == 3
    t.forget_task(1)
    assert len(t) == 1
    assert t.ack(1, 7, E1) is False
    assert t.fail(1, 8) is False
    assert t.ack(2, 7, E3) is True
    clock.advance_to(100.0)
    assert t.expire() == []


def test_forget_unknown_task_is_harmless() -> None:
    t = _tracker()
    t.add(1, 7, E1)
    t.forget_task(9)
    assert len(t) == 1
