"""headwater.common.runtime._emitter: tuples given as columns (``Context.emitter_columns``)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common._exceptions import EmitError
from headwater.common.api import fields
from headwater.common.wire import Kind, data_rows, decode

from .test_emitter import _emitter, _frames, _topology


def test_columns_to_fixed_tasks_leave_as_the_columns_given() -> None:
    em, sink = _emitter(batch_size=4)  # global: every tuple to task 2
    counts: dict[str, int] = {}
    emit_columns = em.unrooted_columns("default", counts)
    emit_columns([["a", "b", "c"], [1, 2, 3]])
    assert sink == [] and em.buffered == 3
    emit_columns([["d", "e"], [4, 5]])  # one fills the frame, the other waits
    (frame,) = _frames(sink)
    assert (frame.kind, frame.dest, frame.entries) == (Kind.DATA_COLUMNS, 2, 4)
    assert decode(frame.payload) == [["a", "b", "c", "d"], [1, 2, 3, 4]]
    em.flush_all()
    assert data_rows(_frames(sink)[1]) == [["e", 5]]
    assert (em.emitted, counts) == (5, {"default": 5})


def test_rows_before_columns_leave_first_and_columns_before_rows_too() -> None:
    em, sink = _emitter(batch_size=100)
    emit = em.unrooted("default", {})
    emit_columns = em.unrooted_columns("default", {})
    emit(["r1"])
    emit_columns([["c1", "c2"]])  # the rows buffered before leave first
    emit(["r2"])  # after the columns, in the same buffer
    emit_columns([["c3"]])  # rows again before: everything before leaves
    em.flush_all()
    got = [(f.kind, data_rows(f)) for f in _frames(sink)]
    assert [rows for _, rows in got] == [[["r1"]], [["c1"], ["c2"]], [["r2"]], [["c3"]]]
    assert [kind for kind, _ in got] == [Kind.DATA_COLUMNS] * 4  # one shape: all columns


def test_columns_to_keyed_tasks_go_by_each_tuples_key() -> None:
    em, sink = _emitter(batch_size=100, topo=_topology(fields("word")))
    em.unrooted_columns("default", {})([["apple", "banana", "apple"]])
    em.flush_all()
    got = {f.dest: data_rows(f) for f in _frames(sink)}
    assert got == {3: [["apple"], ["apple"]], 2: [["banana"]]}


@pytest.mark.parametrize(
    ("cols", "says"),
    [
        ([["a", "b"], [1]], "give each as many"),
        ("ab", "a list of lists"),  # a string is no list of columns
        ([[1, 2], "xy"], "a list of lists"),
        ([{"a": 1}], "a list of lists"),
        ((c for c in [[1]]), "a list of lists"),
    ],
    ids=["unequal", "a string", "a string column", "a dict column", "a generator"],
)
def test_columns_not_of_one_length_or_not_lists_are_refused(cols: Any, says: str) -> None:
    em, sink = _emitter()
    with pytest.raises(EmitError, match=says):
        em.unrooted_columns("default", {})(cols)
    assert em.buffered == 0 and sink == [] and em.emitted == 0


def test_no_columns_or_empty_columns_emit_nothing() -> None:
    em, sink = _emitter()
    counts: dict[str, int] = {}
    emit_columns = em.unrooted_columns("default", counts)
    emit_columns([])
    emit_columns([[]])
    em.flush_all()
    assert (sink, em.emitted, counts) == ([], 0, {})


def test_a_value_the_codec_cannot_carry_is_dropped_alone_from_columns() -> None:
    em, sink = _emitter()
    em.unrooted_columns("default", {})([["a", object(), "c"]])
    em.flush_all()
    (frame,) = _frames(sink)
    assert (frame.kind, data_rows(frame)) == (Kind.DATA, [["a"], ["c"]])
    assert em.serialization_errors == 1
