"""headwater.common.runtime._emitter: batching, roots and ack arithmetic."""

from __future__ import annotations

import logging
import time
from typing import Any

import pytest

from headwater.common._exceptions import EmitError
from headwater.common.api import (
    Bolt,
    Spout,
    Stream,
    Topology,
    Tuple,
    all_tasks,
    fields,
    global_,
    shuffle,
)
from headwater.common.plan._routing import Router, key_hash
from headwater.common.runtime._emitter import Emitter
from headwater.common.wire import Kind, data_rows, decode, parse_frame
from headwater.common.wire._frame import STMGR, Frame

LOG = logging.getLogger("tests.emitter")


class Src(Spout):
    outputs = ("word",)

    def next_tuple(self) -> None:
        pass


class Mid(Bolt):
    outputs = ("word",)

    def process(self, tup: Any) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def _topology(grouping_to_mid: Any = None) -> Topology:
    return (
        Topology("t")
        .add_spout("src", Src)  # task 1
        .add_bolt("mid", Mid, inputs={"src": grouping_to_mid or global_()}, parallelism=2)
        .add_bolt("sink", Sink, inputs={"mid": global_()})  # task 4
    )


def _emitter(
    component: str = "src", task: int = 1, batch_size: int = 100, topo: Topology | None = None
) -> tuple[Emitter, list[bytes]]:
    sink: list[bytes] = []
    router = Router(topo or _topology(), component, None, seed=0)
    return Emitter(router, task, component, sink.append, batch_size, 0.005, LOG), sink


def _frames(sink: list[bytes]) -> list[Frame]:
    return [parse_frame(f) for f in sink]


def test_unrooted_batch_flushes_at_batch_size() -> None:
    em, sink = _emitter(batch_size=3)
    assert em.emit(["a"], "default", None, None, None) == [2]
    em.emit(["b"], "default", None, None, None)
    assert sink == []
    assert em.buffered == 2
    em.emit(["c"], "default", None, None, None)
    assert em.buffered == 0
    (frame,) = _frames(sink)
    assert frame.kind == Kind.DATA_COLUMNS  # untracked tuples of one shape: a column a field
    assert (frame.dest, frame.src, frame.entries, frame.stream) == (2, 1, 3, "default")
    assert decode(frame.payload) == [["a", "b", "c"]]
    assert data_rows(frame) == [["a"], ["b"], ["c"]]
    assert em.emitted == 3


def test_batch_size_one_sends_each_tuple() -> None:
    em, sink = _emitter(batch_size=1)
    em.emit(["a"], "default", None, None, None)
    em.emit(["b"], "default", None, None, None)
    assert [data_rows(f) for f in _frames(sink)] == [[["a"]], [["b"]]]


def test_batches_are_per_destination() -> None:
    topo = _topology(fields("word"))
    em, sink = _emitter(batch_size=2, topo=topo)
    dests = {w: em.emit([w], "default", None, None, None)[0] for w in ["apple", "banana"]}
    assert dests == {"apple": 3, "banana": 2}  # key_hash % 2 over tasks [2, 3]
    assert sink == []
    em.emit(["apple"], "default", None, None, None)
    (frame,) = _frames(sink)
    assert frame.dest == 3
    assert data_rows(frame) == [["apple"], ["apple"]]


def test_flush_all_flushes_everything() -> None:
    topo = _topology(fields("word"))
    em, sink = _emitter(batch_size=100, topo=topo)
    for w in ["apple", "banana", "apple"]:
        em.emit([w], "default", None, None, None)
    assert sink == []
    em.flush_all()
    assert em.buffered == 0
    got = {f.dest: data_rows(f) for f in _frames(sink)}
    assert got == {3: [["apple"], ["apple"]], 2: [["banana"]]}
    sink.clear()
    em.flush_all()
    assert sink == []


def test_flush_due_respects_linger() -> None:
    em, sink = _emitter()
    em.emit(["a"], "default", None, None, None)
    em.flush_due(time.monotonic() - 10.0)
    assert sink == []
    em.flush_due(time.monotonic() + 10.0)
    assert len(sink) == 1


def test_roots_frame_precedes_the_data_frame_carrying_the_root() -> None:
    em, sink = _emitter(batch_size=100)
    em.emit(["a"], "default", [(1, 99)], None, None)
    assert sink == []
    em.flush_all()
    roots, data = _frames(sink)
    assert roots.kind == Kind.ROOTS
    assert roots.dest == STMGR
    assert roots.src == 1
    assert roots.entries == 1
    root_id, edge = decode(roots.payload)
    assert root_id == 99
    assert edge != 0
    assert data.kind == Kind.DATA_ROOTED
    assert data.dest == 2
    assert decode(data.payload) == [[["a"], [1, 99, edge]]]


def test_roots_precede_data_when_the_batch_fills() -> None:
    em, sink = _emitter(batch_size=1)
    em.emit(["a"], "default", [(1, 5)], None, None)
    em.emit(["b"], "default", [(1, 6)], None, None)
    kinds = [f.kind for f in _frames(sink)]
    assert kinds == [Kind.ROOTS, Kind.DATA_ROOTED, Kind.ROOTS, Kind.DATA_ROOTED]
    frames = _frames(sink)
    for roots, data in ((frames[0], frames[1]), (frames[2], frames[3])):
        root_id, edge = decode(roots.payload)
        ((_values, flat),) = decode(data.payload)
        assert flat == [1, root_id, edge]


def test_spout_emit_to_several_destinations_gets_one_edge_each() -> None:
    topo = (
        Topology("t")
        .add_spout("src", Src)
        .add_bolt("a", Sink, inputs={"src": global_()})  # task 2
        .add_bolt("b", Sink, inputs={"src": global_()})  # task 3
    )
    em, sink = _emitter(topo=topo)
    assert em.emit(["x"], "default", [(1, 42)], None, None) == [2, 3]
    em.flush_all()
    frames = _frames(sink)
    assert frames[0].kind == Kind.ROOTS
    flat_roots = decode(frames[0].payload)
    assert flat_roots[0::2] == [42, 42]
    edges = flat_roots[1::2]
    assert len(set(edges)) == 2
    data = {f.dest: decode(f.payload)[0][1] for f in frames[1:]}
    assert sorted(data) == [2, 3]
    assert {flat[2] for flat in data.values()} == set(edges)


def test_anchored_emit_xors_the_edge_into_the_anchor() -> None:
    em, sink = _emitter(component="mid", task=2)
    incoming_edge = 0x1234_5678
    tup = Tuple(None, "src", "default", 1, ["w"], 0.0, roots=[1, 99, incoming_edge])
    assert tup._ack_val == 0
    assert em.emit(["w1"], "default", [(1, 99)], [tup], None) == [4]
    assert em.emit(["w2"], "default", [(1, 99)], [tup], None) == [4]
    em.flush_all()
    (data,) = _frames(sink)  # bolts send no ROOTS frame
    assert data.kind == Kind.DATA_ROOTED
    entries = decode(data.payload)
    e1 = entries[0][1][2]
    e2 = entries[1][1][2]
    assert entries == [[["w1"], [1, 99, e1]], [["w2"], [1, 99, e2]]]
    assert tup._ack_val == e1 ^ e2

    sink.clear()
    em.ack(tup)
    em.flush_all()
    (ack,) = _frames(sink)
    assert ack.kind == Kind.ACK
    assert ack.dest == 1  # the spout task owning the root
    assert ack.src == 2
    assert ack.entries == 1
    assert decode(ack.payload) == [99, incoming_edge ^ e1 ^ e2]


def test_ack_without_emits_reports_the_input_edge() -> None:
    em, sink = _emitter(component="mid", task=2)
    tup = Tuple(None, "src", "default", 1, ["w"], 0.0, roots=[1, 99, 77])
    em.ack(tup)
    em.flush_all()
    (ack,) = _frames(sink)
    assert decode(ack.payload) == [99, 77]


def test_ack_of_a_tuple_with_several_roots() -> None:
    em, sink = _emitter(component="mid", task=2)
    tup = Tuple(None, "src", "default", 1, ["w"], 0.0, roots=[1, 10, 0xA0, 5, 20, 0xB0])
    em.emit(["w"], "default", [(1, 10), (5, 20)], [tup], None)
    em.flush_all()
    (data,) = _frames(sink)
    ((_values, flat),) = decode(data.payload)
    edge = flat[2]
    assert flat == [1, 10, edge, 5, 20, edge]
    sink.clear()
    em.ack(tup)
    em.flush_all()
    acks = {f.dest: decode(f.payload) for f in _frames(sink)}
    assert acks == {1: [10, 0xA0 ^ edge], 5: [20, 0xB0 ^ edge]}


def test_ack_and_fail_of_untracked_tuples_send_nothing() -> None:
    em, sink = _emitter(component="mid", task=2)
    tup = Tuple(None, "src", "default", 1, ["w"], 0.0)
    em.ack(tup)
    em.fail(tup)
    em.flush_all()
    assert sink == []


def test_fail_sends_a_fail_frame_to_the_root_owner() -> None:
    em, sink = _emitter(component="mid", task=2)
    em.fail(Tuple(None, "src", "default", 1, ["w"], 0.0, roots=[1, 99, 5]))
    em.fail(Tuple(None, "src", "default", 1, ["v"], 0.0, roots=[1, 98, 6]))
    em.flush_all()
    (fail,) = _frames(sink)
    assert fail.kind == Kind.FAIL
    assert fail.dest == 1
    assert fail.entries == 2
    assert decode(fail.payload) == [99, 98]


def test_non_serialisable_value_is_dropped_alone() -> None:
    em, sink = _emitter(batch_size=3)
    em.emit([1], "default", None, None, None)
    em.emit([object()], "default", None, None, None)
    em.emit([3], "default", None, None, None)
    (frame,) = _frames(sink)
    assert (frame.kind, frame.entries) == (Kind.DATA, 2)  # the rows' path drops it alone
    assert decode(frame.payload) == [[1], [3]]
    assert em.serialization_errors == 1


def test_non_serialisable_batch_of_only_bad_values_sends_nothing() -> None:
    em, sink = _emitter()
    em.emit([{1, 2}], "default", None, None, None)
    em.flush_all()
    assert sink == []
    assert em.serialization_errors == 1


def test_dropped_rooted_tuple_fails_its_tree() -> None:
    em, sink = _emitter()
    em.emit(["ok"], "default", [(1, 7)], None, None)
    em.emit([object()], "default", [(1, 8)], None, None)
    em.flush_all()
    frames = _frames(sink)
    assert [f.kind for f in frames] == [Kind.ROOTS, Kind.DATA_ROOTED, Kind.FAIL]
    assert decode(frames[0].payload)[0::2] == [7, 8]
    ((values, flat),) = decode(frames[1].payload)
    assert values == ["ok"]
    assert flat[:2] == [1, 7]
    assert frames[2].dest == 1
    assert decode(frames[2].payload) == [8]
    assert em.serialization_errors == 1


def test_non_serialisable_fields_grouping_key_is_dropped_alone() -> None:
    # the emitter promises that a value the codec rejects is dropped alone and
    # counted; that must hold when the value is a fields-grouping key too
    em, sink = _emitter(topo=_topology(fields("word")))
    em.emit(["fine"], "default", None, None, None)
    em.emit([object()], "default", None, None, None)
    em.flush_all()
    assert [data_rows(f) for f in _frames(sink)] == [[["fine"]]]
    assert em.serialization_errors == 1


def test_emit_on_undeclared_stream_raises() -> None:
    em, _sink = _emitter()
    with pytest.raises(EmitError):
        em.emit(["a"], "nope", None, None, None)
    assert em.emitted == 0


def test_emit_without_subscribers_returns_no_destinations() -> None:
    topo = Topology("t").add_spout("src", Src, outputs=[Stream(("w",)), Stream(("x",), "x")])
    topo = topo.add_bolt("s", Sink, inputs={"src": global_()})
    em, sink = _emitter(topo=topo)
    assert em.emit(["a"], "x", [(1, 5)], None, None) == []
    em.flush_all()
    assert sink == []


def test_punctuation_never_overtakes_data_sent_before_it() -> None:
    topo = Topology("t").add_spout(
        "src", Src, outputs=[Stream(("w",)), Stream(("k", "wm"), "wm:s")]
    )
    topo = topo.add_bolt(
        "s", Sink, inputs={("src", "default"): global_(), ("src", "wm:s"): global_()}
    )
    em, sink = _emitter(topo=topo, batch_size=4)
    em.emit([None, 10], "wm:s", None, None, None)  # the punctuation buffer is the older one
    em.emit(["a"], "default", None, None, None)
    em.emit([None, 20], "wm:s", None, None, None)  # covers "a"
    em.flush_due(time.monotonic() + 10.0)  # both due: data leaves first
    assert [(f.stream, data_rows(f)) for f in _frames(sink)] == [
        ("default", [["a"]]),
        ("wm:s", [[None, 10], [None, 20]]),
    ]
    sink.clear()
    for w in "bcd":
        em.emit([w], "default", None, None, None)
    em.emit([None, 30], "wm:s", None, None, None)
    em.emit(["e"], "default", None, None, None)  # fills the data batch: it may go ahead alone
    assert [f.stream for f in _frames(sink)] == ["default"]
    em.flush_all()
    assert [f.stream for f in _frames(sink)] == ["default", "wm:s"]
    assert em.buffered == 0


def test_bound_unrooted_emit_batches_like_emit() -> None:
    topo = _topology(fields("word"))
    em, sink = _emitter(batch_size=2, topo=topo)
    counts: dict[str, int] = {}
    emit = em.unrooted("default", counts)
    for w in ["apple", "banana", "apple"]:
        emit([w])
    emit([object()])  # a grouping key the codec cannot hash: dropped alone, counted
    (frame,) = _frames(sink)
    assert (frame.dest, data_rows(frame)) == (3, [["apple"], ["apple"]])
    em.flush_all()
    assert [decode(f.payload) for f in _frames(sink)][1:] == [[["banana"]]]
    assert (em.emitted, counts, em.serialization_errors) == (3, {"default": 3}, 1)
    with pytest.raises(EmitError):
        em.unrooted("nope", counts)


def _sent(sink: list[bytes]) -> list[tuple[int, str, list[Any]]]:
    return [(f.dest, f.stream, decode(f.payload)) for f in _frames(sink)]


def _by_dest(sent: list[tuple[int, str, list[Any]]]) -> dict[int, list[Any]]:
    out: dict[int, list[Any]] = {}
    for dest, stream, values in sent:
        out.setdefault(dest, []).append((stream, values))
    return out


@pytest.mark.parametrize("grouping", [global_(), all_tasks(), fields("word"), shuffle()], ids=str)
@pytest.mark.parametrize("sizes", [[0], [1, 1, 1], [2, 5], [7], [3, 0, 9, 1, 4]])
def test_bound_emit_all_sends_what_emit_one_at_a_time_sends(
    grouping: Any, sizes: list[int]
) -> None:
    """``emit_all(records)`` is ``emit(r)`` for each record: the same frames to each task,
    in the same order and cut at the same batch size (fixed destinations take whole slices;
    frames to different tasks are independent, and may leave in another order)."""
    records = [[f"w{i % 5}"] for i in range(sum(sizes))]
    got = []
    for bind in ("one", "all"):
        em, sink = _emitter(batch_size=3, topo=_topology(grouping))
        counts: dict[str, int] = {}
        one, many = em.unrooted("default", counts), em.unrooted_all("default", counts)
        at = 0
        for n in sizes:
            batch = records[at : at + n]
            at += n
            if bind == "all":
                many(batch)
                batch.clear()  # the caller may reuse its list: nothing of it is kept
            else:
                for r in batch:
                    one(r)
        before = _sent(sink)
        em.flush_all()
        got.append((_by_dest(before), _by_dest(_sent(sink)), em.emitted, counts))
    assert got[0] == got[1]
    assert got[0][2] == len(records)  # records emitted, whatever their destinations


def test_bound_emits_route_with_the_revision_switched_to() -> None:
    """A revision that changes a stream's consumers (another parallelism, a second one)
    reroutes the emits a chain bound before it: they never keep the old tasks."""
    em, sink = _emitter(batch_size=1, topo=_topology(global_()))
    counts: dict[str, int] = {}
    one, many = em.unrooted("default", counts), em.unrooted_all("default", counts)
    one(["a"])
    many([["b"]])
    assert [d for d, _, _ in _sent(sink)] == [2, 2]  # global: mid's lowest task
    rescaled = (
        Topology("t")
        .add_spout("src", Src)  # task 1
        .add_bolt("mid", Mid, inputs={"src": all_tasks()}, parallelism=3)  # tasks 2-4
        .add_bolt("sink", Sink, inputs={"mid": global_()})
    )
    em.switch(Router(rescaled, "src", None, seed=0))
    sink.clear()
    one(["c"])
    many([["d"]])
    assert [(d, v) for d, _, v in _sent(sink)] == [
        (2, [["c"]]),
        (3, [["c"]]),
        (4, [["c"]]),
        (2, [["d"]]),
        (3, [["d"]]),
        (4, [["d"]]),
    ]
    two = rescaled.add_bolt("other", Sink, inputs={"src": fields("word")}, parallelism=2)
    em.switch(Router(two, "src", None, seed=0))  # two consumers: the general path
    sink.clear()
    one(["e"])
    many([["f"]])
    other = [6, 7]  # after sink's task 5
    assert sorted(d for d, _, _ in _sent(sink)) == sorted(
        [2, 3, 4, other[key_hash("e") % 2], 2, 3, 4, other[key_hash("f") % 2]]
    )
    assert counts == {"default": 6}
