"""headwater.common.runtime._emitter: tuples given as columns (``Context.emitter_columns``)."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common._exceptions import EmitError
from headwater.common.api import Topology, fields, global_
from headwater.common.plan._routing import Router, key_hash
from headwater.common.wire import Kind, data_rows, decode

from .test_emitter import Mid, Sink, Src, _emitter, _frames, _topology


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


def _keyed(parallelism: int) -> Topology:
    return (
        Topology("t")
        .add_spout("src", Src)  # task 1
        .add_bolt("mid", Mid, inputs={"src": fields("word")}, parallelism=parallelism)
        .add_bolt("sink", Sink, inputs={"mid": global_()})
    )


KEYS: list[Any] = ["apple", "banana", "", "ünïcode", "x" * 200, 1, "1", 1.0, True, None, -7, b"b"]


def _by_task(sink: list[bytes]) -> dict[int, list[list[Any]]]:
    got: dict[int, list[list[Any]]] = {}
    for frame in _frames(sink):
        got.setdefault(frame.dest, []).extend(data_rows(frame))
    return got


@pytest.mark.parametrize("parallelism", [2, 3, 5])
@pytest.mark.parametrize("chunk", [5, 41], ids=["few: one by one", "many: split"])
def test_keyed_columns_reach_the_tasks_their_keys_do_one_by_one_as_columns(
    parallelism: int, chunk: int
) -> None:
    rows = [[key, i] for i, key in enumerate(KEYS * 30)]  # a key seen again is remembered
    by_one, one_sink = _emitter(batch_size=50, topo=_keyed(parallelism))
    emit = by_one.unrooted("default", {})
    for row in rows:
        emit(row)
    by_one.flush_all()
    by_cols, cols_sink = _emitter(batch_size=50, topo=_keyed(parallelism))
    counts: dict[str, int] = {}
    emit_columns = by_cols.unrooted_columns("default", counts)
    for start in range(0, len(rows), chunk):  # buffers of 50 fill across calls
        part = rows[start : start + chunk]
        emit_columns([[k for k, _ in part], [v for _, v in part]])
    by_cols.flush_all()
    assert bool(by_cols._routes["default"].seen) == (chunk > 32)  # the keys' tasks remembered
    assert _by_task(cols_sink) == _by_task(one_sink)  # each task's rows, in order
    assert {f.kind for f in _frames(cols_sink)} == {Kind.DATA_COLUMNS}
    assert (by_cols.emitted, counts) == (len(rows), {"default": len(rows)})


def test_a_key_the_codec_cannot_carry_is_dropped_alone_from_keyed_columns() -> None:
    em, sink = _emitter(topo=_keyed(2))
    counts: dict[str, int] = {}
    em.unrooted_columns("default", counts)([["a", object(), "c"] * 20, [1, 2, 3] * 20])
    em.flush_all()
    got = sorted(row for rows in _by_task(sink).values() for row in rows)
    assert got == [["a", 1]] * 20 + [["c", 3]] * 20
    assert em.serialization_errors == 20 and counts == {"default": 40}


def test_keyed_columns_go_to_the_tasks_of_the_revision_switched_to() -> None:
    em, sink = _emitter(batch_size=1000, topo=_keyed(2))
    emit_columns = em.unrooted_columns("default", {})
    words = [f"w{i}" for i in range(40)]  # past the fewest that are split
    emit_columns([words])
    em.flush_all()
    assert {d for d in _by_task(sink)} == {2, 3}
    em.switch(Router(_keyed(3), "src", None, seed=0))  # the keys' tasks seen before: forgotten
    sink.clear()
    emit_columns([words])
    em.flush_all()
    tasks = [2, 3, 4]
    want: dict[int, list[list[Any]]] = {}
    for w in words:
        want.setdefault(tasks[key_hash(w) % 3], []).append([w])
    assert _by_task(sink) == want


def test_keyed_columns_of_every_size_and_single_emits_mixed_keep_each_task_s_order() -> None:
    rows = [[key, i] for i, key in enumerate(KEYS * 40)]
    by_one, one_sink = _emitter(batch_size=64, topo=_keyed(3))
    emit = by_one.unrooted("default", {})
    for row in rows:
        emit(row)
    by_one.flush_all()
    mixed, mixed_sink = _emitter(batch_size=64, topo=_keyed(3))
    single, emit_columns = mixed.unrooted("default", {}), mixed.unrooted_columns("default", {})
    sizes, start, turn = [5, 41, 1, 3, 40, 70], 0, 0
    while start < len(rows):
        size = sizes[turn % len(sizes)]
        part = rows[start : start + size]
        if size == 1:
            single(part[0])  # rows in a task's buffer before the next call's columns
        else:
            emit_columns([[k for k, _ in part], [v for _, v in part]])
        start, turn = start + size, turn + 1
    mixed.flush_all()
    assert _by_task(mixed_sink) == _by_task(one_sink)
