"""headwater.common.dsl._fused._Chain: fused steps call each other; what leaves, what counts."""

from __future__ import annotations

from typing import Any

from headwater.common.dsl._fused import _Chain
from headwater.common.dsl._ops import FilterOp, FlatMapOp, KeyByOp, MapOp, SinkOp
from headwater.testing import TestContext


def emitted(ctx: TestContext) -> list[list[Any]]:
    """What the chain emitted, each as ``[stream, *values]``."""
    return [[e.stream, *e.values] for e in ctx.emitted]


class Double(MapOp):
    """A subclass with a process of its own: the chain must call it."""

    def process(self, key: Any, value: Any, out: Any, side: Any) -> None:
        out(key, value)
        out(key, value)


def test_steps_run_in_order_and_the_last_emits() -> None:
    ctx = TestContext()
    ops = [
        FlatMapOp("split", str.split),
        FilterOp("long", lambda w: len(w) > 1),
        KeyByOp("first", lambda w: w[0]),
        MapOp("upper", str.upper),
        Double("twice", str),
    ]
    chain = _Chain(ops, ctx)
    chain.first(None, "ab c de")
    assert emitted(ctx) == [
        ["default", "a", "AB"],
        ["default", "a", "AB"],
        ["default", "d", "DE"],
        ["default", "d", "DE"],
    ]


def test_a_sink_counts_its_records_and_emits_nothing() -> None:
    ctx = TestContext()
    seen: list[Any] = []
    chain = _Chain([MapOp("inc", lambda v: v + 1), SinkOp("out", seen.append)], ctx)
    for v in range(3):
        chain.first(None, v)
    assert (seen, emitted(ctx), ctx.counters) == ([1, 2, 3], [], {})
    chain.settle()  # counted per frame, not with a call per record
    assert ctx.counters == {"records:out": 3}
    chain.settle()
    assert ctx.counters == {"records:out": 3}
