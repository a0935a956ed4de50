"""headwater.common.runtime._staging: frames waiting for instances, peers and successors."""

from __future__ import annotations

from headwater.common.runtime._staging import Staging, peer_slot
from headwater.common.wire import Kind, encode_frame, marker_frame


def _data(dest: int, src: int) -> bytes:
    return encode_frame(Kind.DATA, dest, src, 1, b"default", b"\x91\x91\x01")


def test_frames_wait_in_order_and_are_taken_once() -> None:
    s = Staging()
    a, b = _data(4, 1), _data(4, 2)
    s.park(4, a)
    assert s.park(4, b) == len(a) + len(b)
    s.park(peer_slot(2), a)
    assert s.total_bytes() == 2 * len(a) + len(b)
    assert s.take(4) == [a, b] and s.take(4) == []
    assert s.take(peer_slot(2)) == [a]


def test_a_new_plan_drops_what_waits_for_removed_tasks_only() -> None:
    s = Staging()
    s.park(4, _data(4, 1))
    s.park(5, _data(5, 1))
    s.park(peer_slot(1), _data(9, 1))
    s.forget_removed({5})
    assert set(s.frames) == {5, peer_slot(1)}


def test_a_retiring_task_gets_what_came_before_each_sources_marker() -> None:
    s = Staging()
    retiring = s.retiring  # the stmgr's reference stays valid
    s.stage({4}, at=7)
    assert retiring == {4: (7, set())}
    before = _data(4, 1)
    assert not s.hold(4, before)
    assert not s.hold(4, marker_frame(4, 1, 7))  # the marker passes
    after = _data(4, 1)
    assert s.hold(4, after)  # source 1 is past the barrier: kept for the successor
    assert not s.hold(4, _data(4, 2))  # source 2 is not
    assert s.take(4) == [after]
    s.unstage()
    assert retiring == {}
