"""headwater.common.dsl._ops._Chain: fused steps call each other; what leaves, what counts."""

from __future__ import annotations

from typing import Any, cast

from headwater.common.api import Context
from headwater.common.dsl._ops import FilterOp, FlatMapOp, KeyByOp, MapOp, SinkOp, _Chain
from headwater.common.state import KeyedState, State


class Ctx:
    def __init__(self) -> None:
        self.state = State()
        self.emitted: list[list[Any]] = []
        self.counters: dict[str, int] = {}

    def keyed_state(self, name: str) -> KeyedState:
        return KeyedState()

    def emit(self, values: list[Any], stream: str = "default", **_: Any) -> None:
        self.emitted.append([stream, *values])

    def emitter(self, stream: str = "default") -> Any:
        return lambda values: self.emit(values, stream)

    def incr(self, counter: str, by: int = 1) -> None:
        self.counters[counter] = self.counters.get(counter, 0) + by


class Double(MapOp):
    """A subclass with a process of its own: the chain must call it."""

    def process(self, key: Any, value: Any, out: Any, side: Any) -> None:
        out(key, value)
        out(key, value)


def test_steps_run_in_order_and_the_last_emits() -> None:
    ctx = Ctx()
    ops = [
        FlatMapOp("split", str.split),
        FilterOp("long", lambda w: len(w) > 1),
        KeyByOp("first", lambda w: w[0]),
        MapOp("upper", str.upper),
        Double("twice", str),
    ]
    chain = _Chain(ops, cast(Context, ctx))
    chain.first(None, "ab c de")
    assert ctx.emitted == [["default", "a", "AB"], ["default", "a", "AB"],
                           ["default", "d", "DE"], ["default", "d", "DE"]]  # fmt: skip


def test_a_sink_counts_its_records_and_emits_nothing() -> None:
    ctx = Ctx()
    seen: list[Any] = []
    chain = _Chain([MapOp("inc", lambda v: v + 1), SinkOp("out", seen.append)], cast(Context, ctx))
    for v in range(3):
        chain.first(None, v)
    assert (seen, ctx.emitted, ctx.counters) == ([1, 2, 3], [], {"records:out": 3})
