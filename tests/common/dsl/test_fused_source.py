"""headwater.common.dsl._fused_source: what a source emits in one call runs through its chain
as a frame's records, in order, and none of it is still held when the call returns."""

from __future__ import annotations

from typing import Any

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
