"""A columnar frame reaches each kind of bolt as that bolt takes frames (wire/_columns.py)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle
from headwater.common.wire import Kind, columns, data_rows, encode, encode_frame, parse_frame

from ._opened import Opened

VALUES = [["a", 1], ["b", 2], ["a", 3]]


class Src(Spout):
    outputs = ("k", "v")

    def next_tuple(self) -> None: ...


class Plain(Bolt):
    outputs = ("k", "v")

    def open(self, ctx: Context) -> None:
        self.got: list[Any] = []

    def process(self, tup: Tuple) -> None:
        self.got.append(tup.values)


class Frames(Plain):
    """A ``BatchBolt``: whole frames, as value lists."""

    def process_values(self, component: str, stream: str, task: int, entries: Any) -> None:
        self.got.append(("values", component, stream, task, entries))


class Columns(Frames):
    """A ``ColumnBolt`` too: a columnar frame's columns as they came."""

    def process_columns(self, component: str, stream: str, task: int, cols: Any) -> None:
        self.got.append(("columns", component, stream, task, cols))


def _topology(bolt: type[Bolt], mode: str = "ATMOST_ONCE") -> Topology:
    return (
        Topology("t", config={"topology.reliability.mode": mode})
        .add_spout("src", Src)  # task 1
        .add_bolt("work", bolt, inputs={"src": shuffle()})  # task 2
        .add_bolt("out", Plain, inputs={"work": shuffle()})  # task 3
    )


def _deliver(bolt: type[Bolt], opened: Opened) -> list[Any]:
    inst = opened(_topology(bolt), 2)
    payload = encode(columns(VALUES))
    inst.gate.handle(encode_frame(Kind.DATA_COLUMNS, 2, 1, 3, b"default", payload))
    assert inst.counts.received == inst.counts.executed == 3
    made = inst.component_obj
    assert isinstance(made, Plain)
    return made.got


def test_a_column_bolt_takes_the_columns_whole(opened: Opened) -> None:
    assert _deliver(Columns, opened) == [
        ("columns", "src", "default", 1, [["a", "b", "a"], [1, 2, 3]])
    ]


def test_a_batch_bolt_takes_value_lists_as_from_rows(opened: Opened) -> None:
    ((how, *_, entries),) = _deliver(Frames, opened)
    assert (how, entries) == ("values", VALUES)
    assert all(type(e) is list for e in entries)


def test_a_bolt_takes_a_tuple_per_record_with_value_lists(opened: Opened) -> None:
    got = _deliver(Plain, opened)
    assert got == VALUES and all(type(v) is list for v in got)


@pytest.mark.parametrize("mode", ["ATMOST_ONCE", "ATLEAST_ONCE"])
def test_columns_emitted_leave_as_the_tuples_they_hold_in_every_mode(
    mode: str, opened: Opened
) -> None:
    inst = opened(_topology(Plain, mode), 2)
    inst.ctx.emitter_columns()([["a", "b"], [1, 2]])
    inst.emitter.flush_all()
    frames = []
    while (raw := inst.gateway.outbox.get(timeout=0)) is not None:
        frames.append(parse_frame(raw))
    data = [f for f in frames if f.kind in (Kind.DATA, Kind.DATA_COLUMNS)]
    assert [(f.dest, data_rows(f)) for f in data] == [(3, [["a", 1], ["b", 2]])]
    assert inst.counts.stream_emits == {"default": 2}
