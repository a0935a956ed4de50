"""A fused chain's watermark: the lowest of the tasks feeding it now, also after a rescale."""

from __future__ import annotations

from typing import Any

from headwater.common.api import Spout, Stream, Topology, all_tasks, shuffle
from headwater.common.dsl._fused import END_OF_TIME, FusedBolt
from headwater.common.dsl._ops import Op, Out, Side
from headwater.testing import TestContext


class Up(Spout):
    outputs = (Stream(("key", "value")), Stream(("key", "value"), name="wm:w"))

    def next_tuple(self) -> None:
        pass


class Moves(Op):
    """Notes each watermark the chain moves it on."""

    def __init__(self, name: str, seen: list[int]) -> None:
        super().__init__(name)
        self.seen = seen

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        pass

    def on_watermark(self, watermark: int, out: Out, side: Side) -> None:
        self.seen.append(watermark)


def _bolt(seen: list[int]) -> tuple[FusedBolt, TestContext]:
    topo = (
        Topology("t")
        .add_spout("up", Up, parallelism=2)  # tasks 1, 2
        .add_bolt(
            "w",
            lambda: FusedBolt(lambda: [Moves("w", seen)]),
            inputs={("up", "default"): shuffle(), ("up", "wm:w"): all_tasks()},
        )
    )
    ctx = TestContext(topo, "w")
    bolt = FusedBolt(lambda: [Moves("w", seen)])
    bolt.open(ctx)
    return bolt, ctx


def _send(bolt: FusedBolt, task: int, wm: int) -> None:
    bolt.process_values("up", "wm:w", task, [[None, wm]])


def test_the_watermark_is_the_lowest_once_every_feeding_task_sent_one() -> None:
    seen: list[int] = []
    bolt, _ = _bolt(seen)
    _send(bolt, 1, 30)
    assert seen == []  # task 2 has not spoken
    _send(bolt, 2, 20)
    _send(bolt, 2, 40)
    _send(bolt, 1, 25)  # lower than its own last: ignored
    assert seen == [20, 30]


def test_after_a_rescale_upstream_the_new_tasks_move_the_watermark() -> None:
    """A revision that rescales the feeding component gives it other tasks while this
    instance runs on (the context's ids change at the switch): the retired tasks'
    watermarks are forgotten, and the new tasks' move it on once each has sent one."""
    seen: list[int] = []
    bolt, ctx = _bolt(seen)
    for task in (1, 2):
        _send(bolt, task, 10)
    assert seen == [10]
    ctx._ids = {**ctx._ids, "up": [10, 11, 12]}  # as Instance.switch_to replaces its ids
    _send(bolt, 10, 20)
    _send(bolt, 11, 25)
    assert seen == [10]  # task 12 has not spoken
    _send(bolt, 12, 30)
    assert seen == [10, 20]
    _send(bolt, 2, 99)  # a late word from a retired task changes nothing
    assert seen == [10, 20]
    for task in (10, 11, 12):
        _send(bolt, task, END_OF_TIME)
    assert seen == [10, 20, 25, 30, END_OF_TIME]


def test_a_new_task_s_watermark_before_the_switch_is_kept() -> None:
    """A new upstream task may speak before this instance has switched to the revision that
    has it: its watermark counts from the switch on (an idle task may never send again)."""
    seen: list[int] = []
    bolt, ctx = _bolt(seen)
    _send(bolt, 10, 50)  # not a source yet
    for task in (1, 2):
        _send(bolt, task, 10)
    assert seen == [10]
    ctx._ids = {**ctx._ids, "up": [10, 11]}
    _send(bolt, 11, 40)
    assert seen == [10, 40]
