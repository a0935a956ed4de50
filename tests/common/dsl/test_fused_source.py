"""headwater.common.dsl._fused_source: what a source emits in one call runs through its chain
as a frame's records, in order, and none of it is still held when the call returns."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.api import Context, Spout
from headwater.common.dsl._compile import GATHER
from headwater.common.dsl._fused_source import FusedSpout
from headwater.common.dsl._ops import FlatMapOp, KeyByOp, MapOp, SinkOp
from headwater.testing import TestContext


class Counting(TestContext):
    """A test context that counts the calls of its columns' emit and their sizes."""

    def __init__(self) -> None:
        super().__init__()
        self.columns: list[int] = []

    def emitter_columns(self, stream: str = "default") -> Any:
        emit = super().emitter_columns(stream)

        def bound(cols: list[list[Any]]) -> None:
            self.columns.append(len(cols[0]))
            emit(cols)

        return bound


class Sentences(Spout):
    """Each call emits ``per_call`` sentences; ``on_checkpoint`` emits one more."""

    per_call = 2500

    def open(self, ctx: Context) -> None:
        self.ctx, self.n = ctx, 0

    def next_tuple(self) -> None:
        for _ in range(self.per_call):
            self.ctx.emit([f"s{self.n} a b"])
            self.n += 1

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self.ctx.emit([f"checkpoint {checkpoint_id}"])


def _words() -> list[Any]:
    return [FlatMapOp("split", str.split), KeyByOp("key", lambda w: w[:1]), MapOp("m", len)]


def test_one_call_s_records_leave_in_order_in_frames_worth_and_none_stays_held() -> None:
    ctx = Counting()
    spout = FusedSpout(Sentences, _words)
    spout.open(ctx)
    assert spout.next_tuple() is True
    sent = [f"s{n} a b".split() for n in range(Sentences.per_call)]
    want = [[w[:1], len(w)] for words in sent for w in words]
    assert ctx.values() == want  # every record, in the order emitted
    assert sum(ctx.columns) == len(want) and max(ctx.columns) <= GATHER
    assert len(ctx.columns) < len(want) / 100  # frames' worth, not a call per sentence
    spout.on_checkpoint(7)  # emitted in another call: through the chain before it returns
    assert ctx.values()[-2:] == [["c", 10], ["7", 1]]


def test_a_sink_at_the_end_counts_what_one_call_emitted() -> None:
    ctx = TestContext()
    took: list[Any] = []
    spout = FusedSpout(Sentences, lambda: [*_words(), SinkOp("out", took.append)])
    spout.open(ctx)
    spout.next_tuple()
    assert len(took) == 3 * Sentences.per_call
    assert ctx.counters == {"records:out": 3 * Sentences.per_call}
    assert ctx.emitted == []


class Failing(Sentences):
    """Emits in ``open`` too, and raises half way through its first call."""

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        ctx.emit(["opened x"])

    def next_tuple(self) -> None:
        for word in ("first y", "second z"):
            self.ctx.emit([word])
        raise RuntimeError("the source broke")


def test_what_a_source_emitted_before_it_raised_or_in_open_still_runs() -> None:
    ctx = TestContext()
    spout = FusedSpout(Failing, _words)
    spout.open(ctx)
    assert ctx.values() == [["o", 6], ["x", 1]]  # open's records ran before it returned
    with pytest.raises(RuntimeError, match="the source broke"):
        spout.next_tuple()
    assert ctx.values()[2:] == [["f", 5], ["y", 1], ["s", 6], ["z", 1]]


class Flushing(TestContext):
    """A context with the runtime's ``flush``: records how many tuples were out at each."""

    def __init__(self) -> None:
        super().__init__()
        self.flushed: list[int] = []

    def flush(self) -> None:
        self.flushed.append(len(self.emitted))


class Fencing(Sentences):
    per_call = 3

    def next_tuple(self) -> None:
        super().next_tuple()
        self.ctx.flush()  # type: ignore[attr-defined]  # as a move's fence does
        self.ctx.emit(["after the fence"])


def test_a_source_s_flush_sends_what_it_emitted_through_the_chain_first() -> None:
    ctx = Flushing()
    spout = FusedSpout(Fencing, _words)
    spout.open(ctx)
    spout.next_tuple()
    assert ctx.flushed == [9]  # the three sentences' nine words were out before the flush
    assert len(ctx.values()) == 12


def test_a_record_a_step_raises_on_is_dead_lettered_alone() -> None:
    ctx = TestContext()

    def length(word: str) -> int:
        if word == "b":
            raise ValueError("no b")
        return len(word)

    spout = FusedSpout(Sentences, lambda: [FlatMapOp("split", str.split), MapOp("m", length)])
    spout.open(ctx)
    spout.next_tuple()
    assert len(ctx.values()) == 2 * Sentences.per_call  # every word but the b's
    assert len(ctx.dead_letters) == Sentences.per_call
