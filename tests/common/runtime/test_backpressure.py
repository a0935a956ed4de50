"""headwater.common.runtime._backpressure: keys, the peers' keys, throttling, timing."""

from __future__ import annotations

from headwater.common._clock import ManualClock
from headwater.common.runtime._backpressure import Backpressure
from headwater.common.wire._control import Backpressure as BpMessage
from headwater.common.wire._control import BackpressureReset, ControlMessage


class _Stmgr:
    def __init__(self) -> None:
        self.sent: list[ControlMessage] = []
        self.throttled: list[frozenset[str]] = []

    def broadcast(self, msg: ControlMessage) -> None:
        self.sent.append(msg)

    def throttle(self, spouts: frozenset[str]) -> None:
        self.throttled.append(spouts)


def test_a_key_of_ours_is_broadcast_and_throttles_its_spouts() -> None:
    stmgr = _Stmgr()
    bp = Backpressure(0, stmgr, ManualClock())
    bp.on("task:3", frozenset({"b", "a"}))
    assert stmgr.sent == [BpMessage(True, "0/task:3", ("a", "b"))]
    assert bp.throttled == {"a", "b"} and stmgr.throttled == [frozenset({"a", "b"})]
    bp.off("task:3")
    assert stmgr.sent[-1] == BpMessage(False, "0/task:3", ("a", "b"))
    assert bp.throttled == frozenset() and stmgr.throttled[-1] == frozenset()
    bp.off("task:3")  # already off: nothing more
    assert len(stmgr.sent) == 2


def test_time_under_backpressure_and_throttled_follows_the_clock() -> None:
    clock = ManualClock()
    bp = Backpressure(0, _Stmgr(), clock)
    bp.on("peer:1", frozenset({"s"}))
    clock.advance(2.0)
    assert bp.times() == (2.0, 2.0)
    bp.off("peer:1")
    clock.advance(5.0)
    assert bp.times() == (2.0, 2.0)
    bp.on_peer(BpMessage(True, "4/task:9", ("s",)))  # a peer's key throttles, ours is off
    clock.advance(1.0)
    assert bp.times() == (2.0, 3.0)


def test_a_reset_forgets_only_the_keys_of_its_origin() -> None:
    bp = Backpressure(0, _Stmgr(), ManualClock())
    bp.on_peer(BpMessage(True, "1/task:2", ("src",)))
    bp.on_peer(BpMessage(True, "3/task:9", ("other",)))
    bp.on_peer(BackpressureReset(1))
    assert bp.throttled == {"other"}


def test_hello_holds_a_reset_and_the_live_keys() -> None:
    bp = Backpressure(2, _Stmgr(), ManualClock())
    bp.on("task:5", frozenset({"s"}))
    assert bp.hello() == [BackpressureReset(2), BpMessage(True, "2/task:5", ("s",))]
    bp.reset()
    assert bp.hello() == [BackpressureReset(2)] and bp.throttled == frozenset()
