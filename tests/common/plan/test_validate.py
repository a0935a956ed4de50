"""headwater.common.plan._validate: every defect named, with its component and fix."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any, cast

import pytest

from headwater.common._exceptions import InvalidTopologyError
from headwater.common.api import (
    Bolt,
    ComponentSpec,
    Grouping,
    Input,
    Spout,
    Stream,
    Topology,
    all_tasks,
    custom,
    direct,
    fields,
    global_,
    none,
    shuffle,
)
from headwater.common.plan import validate


class Words(Spout):
    outputs = ("word",)

    def next_tuple(self) -> None:
        pass


class Pass(Bolt):
    outputs = ("word",)

    def process(self, tup: Any) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


class EveryOther:
    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        self.tasks = target_tasks

    def choose_tasks(self, values: list[object]) -> list[int]:
        return self.tasks[:1]


def _problems(topo: Topology) -> tuple[str, ...]:
    with pytest.raises(InvalidTopologyError) as info:
        validate(topo)
    assert info.value.topology == topo.name
    for p in info.value.problems:
        assert p in str(info.value)
    return info.value.problems


def _one_problem(topo: Topology) -> str:
    problems = _problems(topo)
    assert len(problems) == 1, problems
    return problems[0]


def _valid() -> Topology:
    return (
        Topology("wc")
        .add_spout("words", Words, parallelism=2)
        .add_bolt("count", Pass, inputs={"words": fields("word")}, parallelism=3)
        .add_bolt("sink", Sink, inputs={"count": global_()})
    )


def test_valid_topology_passes() -> None:
    validate(_valid())


def test_valid_topology_with_every_grouping_passes() -> None:
    class Directed(Spout):
        outputs = (Stream(("word",)), Stream(("word",), name="d", direct=True))

        def next_tuple(self) -> None:
            pass

    topo = (
        Topology("all")
        .add_spout("src", Directed)
        .add_bolt(
            "b",
            Sink,
            inputs=[
                Input("src", "default", shuffle()),
                Input("src", "default", fields("word")),
                Input("src", "default", all_tasks()),
                Input("src", "default", global_()),
                Input("src", "default", none()),
                Input("src", "d", direct()),
                Input("src", "default", custom(EveryOther())),
            ],
        )
    )
    validate(topo)


def test_valid_diamond_passes() -> None:
    topo = (
        Topology("d")
        .add_spout("s", Words)
        .add_bolt("a", Pass, inputs={"s": shuffle()})
        .add_bolt("b", Pass, inputs={"s": shuffle()})
        .add_bolt("c", Sink, inputs={"a": shuffle(), "b": shuffle()})
    )
    validate(topo)


def test_cycle() -> None:
    topo = (
        Topology("loop")
        .add_spout("s", Words)
        .add_bolt("a", Pass, inputs={"s": shuffle(), "b": shuffle()})
        .add_bolt("b", Pass, inputs={"a": shuffle()})
    )
    problem = _one_problem(topo)
    assert problem.startswith("cycle:")
    assert "'a'" in problem
    assert "'b'" in problem
    assert "DAG" in problem
    assert "remove the input of" in problem


def test_self_loop() -> None:
    topo = (
        Topology("t")
        .add_spout("s", Words)
        .add_bolt("a", Pass, inputs={"s": shuffle(), "a": shuffle()})
    )
    problem = _one_problem(topo)
    assert "cycle: 'a' -> 'a'" in problem
    assert "remove the input of 'a' from 'a'" in problem


def test_unknown_input_component_with_did_you_mean() -> None:
    topo = (
        Topology("t").add_spout("words", Words).add_bolt("count", Sink, inputs={"wrods": shuffle()})
    )
    problem = _one_problem(topo)
    assert "bolt 'count'" in problem
    assert "unknown component 'wrods'" in problem
    assert "did you mean 'words'?" in problem


def test_unknown_input_component_without_close_match() -> None:
    topo = (
        Topology("t")
        .add_spout("words", Words)
        .add_bolt("count", Sink, inputs={"zzzzzzz": shuffle()})
    )
    problem = _one_problem(topo)
    assert "bolt 'count'" in problem
    assert "unknown component 'zzzzzzz'" in problem
    assert "did you mean" not in problem
    assert "fix the name" in problem


def test_unknown_stream() -> None:
    topo = (
        Topology("t")
        .add_spout("words", Words)
        .add_bolt("count", Sink, inputs={("words", "errors"): shuffle()})
    )
    problem = _one_problem(topo)
    assert "bolt 'count'" in problem
    assert "'errors'" in problem
    assert "'words'" in problem
    assert "it declares: 'default'" in problem
    assert "declare it in 'words''s outputs" in problem


def test_undeclared_grouping_field() -> None:
    topo = (
        Topology("t")
        .add_spout("words", Words)
        .add_bolt("count", Sink, inputs={"words": fields("word", "lang")})
    )
    problem = _one_problem(topo)
    assert "bolt 'count'" in problem
    assert "undeclared field(s) 'lang'" in problem
    assert "the stream declares 'word'" in problem


def test_fields_grouping_without_fields() -> None:
    topo = (
        Topology("t").add_spout("words", Words).add_bolt("count", Sink, inputs={"words": fields()})
    )
    problem = _one_problem(topo)
    assert "bolt 'count'" in problem
    assert "names no field" in problem


def test_direct_grouping_on_non_direct_stream() -> None:
    topo = (
        Topology("t").add_spout("words", Words).add_bolt("count", Sink, inputs={"words": direct()})
    )
    problem = _one_problem(topo)
    assert "bolt 'count'" in problem
    assert "direct grouping" in problem
    assert "direct=True" in problem


def test_spout_with_inputs() -> None:
    bad = ComponentSpec("s2", "spout", Words, inputs=(Input("s1"),), outputs=(Stream(("w",)),))
    topo = Topology("t").add_spout("s1", Words).add(bad)
    problem = _one_problem(topo)
    assert "spout 's2' has inputs" in problem
    assert "make it a bolt" in problem


def test_bolt_without_inputs() -> None:
    topo = Topology("t").add_spout("s", Words).add_bolt("lonely", Sink, inputs={})
    problem = _one_problem(topo)
    assert "bolt 'lonely' has no inputs" in problem
    assert "subscribe it to a stream or remove it" in problem


def test_non_serialisable_schema_type() -> None:
    lock_type = cast(type, threading.Lock)

    class Locked(Spout):
        outputs = (Stream(("guard", "n"), schema=(lock_type, int)),)

        def next_tuple(self) -> None:
            pass

    topo = (
        Topology("t")
        .add_spout("locked", Locked)
        .add_bolt("sink", Sink, inputs={"locked": shuffle()})
    )
    problem = _one_problem(topo)
    assert "spout 'locked'" in problem
    assert "field 'guard'" in problem
    assert "cannot be serialised" in problem
    assert "convert the value" in problem
    assert "'n'" not in problem


@pytest.mark.parametrize("tp", [set, object, complex])
def test_non_serialisable_schema_classes(tp: type) -> None:
    topo = Topology("t").add_spout("s", Words, outputs=[Stream(("v",), schema=(tp,))])
    problem = _one_problem(topo)
    assert "spout 's'" in problem
    assert f"has type {tp.__qualname__!r}" in problem


def test_serialisable_schema_passes() -> None:
    topo = Topology("t").add_spout(
        "s",
        Words,
        outputs=[Stream(("a", "b", "c", "d"), schema=(str, float, dict, dt.datetime))],
    )
    validate(topo)


def test_schema_length_mismatch() -> None:
    topo = Topology("t").add_spout("s", Words, outputs=[Stream(("a", "b"), schema=(str,))])
    problem = _one_problem(topo)
    assert "spout 's'" in problem
    assert "2 fields but 1 schema types" in problem


def test_no_spout() -> None:
    topo = (
        Topology("t")
        .add_bolt("a", Sink, inputs={"b": shuffle()})
        .add_bolt("b", Pass, inputs={"a": shuffle()})
    )
    problems = _problems(topo)
    assert any("no spout" in p and "source" in p for p in problems)


def test_empty_topology() -> None:
    problem = _one_problem(Topology("empty"))
    assert "no components" in problem
    assert "add at least one spout" in problem


def test_duplicate_names_found_by_validate() -> None:
    spec = ComponentSpec("s", "spout", Words, outputs=(Stream(("w",)),))
    topo = Topology("t", components=(spec, spec))
    problem = _one_problem(topo)
    assert "do you have two components with the same name" in problem


def test_bad_parallelism_and_reserved_name() -> None:
    topo = Topology("t").add_spout("__system", Words, parallelism=0)
    problems = _problems(topo)
    assert any("parallelism is 0" in p and "spout '__system'" in p for p in problems)
    assert any("the runtime's own components" in p for p in problems)
    outbox = Topology("t").add_spout("__outbox__words", Words)
    assert any("the runtime's own components" in p for p in _problems(outbox))
    validate(Topology("t").add_spout("__words", Words))  # other `__` names are the user's


def test_bad_config_is_reported_per_component() -> None:
    topo = Topology("t").add_spout("s", Words, config={"topology.reliability.mode": "SOMETIMES"})
    problem = _one_problem(topo)
    assert "spout 's': bad config" in problem
    assert "topology.reliability.mode" in problem


def test_a_component_cannot_run_another_reliability_mode_than_its_topology() -> None:
    topo = (
        Topology("t", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
        .add_spout("s", Words)
        .add_bolt(
            "b", Sink, inputs={"s": shuffle()}, config={"topology.reliability.mode": "ATLEAST_ONCE"}
        )
    )
    problem = _one_problem(topo)
    assert "bolt 'b': its config sets topology.reliability.mode ATLEAST_ONCE" in problem
    assert "the topology runs EFFECTIVELY_ONCE" in problem
    same = Topology("t").add_spout("s", Words, config={"topology.reliability.mode": "ATMOST_ONCE"})
    validate(same)  # the topology's own mode, said again: fine
    bad = Topology("t", config={"topology.reliability.mode": "SOMETIMES"}).add_spout(
        "s", Words, config={"topology.reliability.mode": "ATMOST_ONCE"}
    )
    assert "topology 't': bad config" in _one_problem(bad)  # even where no component runs it
    worse = Topology("t", config={"topology.reliability.mode": "SOMETIMES"}).add_spout("s", Words)
    assert "topology 't': bad config" in _one_problem(worse)  # once, not again per component


def test_duplicate_stream_and_repeated_field() -> None:
    topo = Topology("t").add_spout("s", Words, outputs=[Stream(("a", "a")), Stream(("b",))])
    problems = _problems(topo)
    assert any("declares stream 'default' twice" in p for p in problems)
    assert any("repeats a field name" in p for p in problems)


def test_custom_grouping_without_the_protocol() -> None:
    grouping = Grouping("custom", custom=cast(Any, object()))
    topo = Topology("t").add_spout("s", Words).add_bolt("b", Sink, inputs={"s": grouping})
    problem = _one_problem(topo)
    assert "bolt 'b'" in problem
    assert "choose_tasks(values)" in problem


def test_several_problems_reported_at_once() -> None:
    topo = (
        Topology("messy")
        .add_spout("words", Words)
        .add_bolt("count", Sink, inputs={"wrods": shuffle()})
        .add_bolt("direct", Sink, inputs={"words": direct()})
        .add_bolt("grouped", Sink, inputs={"words": fields("nope")})
        .add_bolt("lonely", Sink, inputs=[])
    )
    problems = _problems(topo)
    assert len(problems) == 4
    joined = "\n".join(problems)
    assert "did you mean 'words'" in joined
    assert "bolt 'direct' uses direct grouping" in joined
    assert "bolt 'grouped' groups" in joined
    assert "bolt 'lonely' has no inputs" in joined


@pytest.mark.parametrize("name", ["../../evil", "a/b", "", ".", "..", "my topology", "x" * 65])
def test_a_topology_name_that_cannot_name_a_file_is_refused(name: str) -> None:
    """The name names files (a local run's record and token): `..` or `/` would reach out."""
    topo = Topology(name).add_spout("words", Words)
    assert _one_problem(topo) == (
        f"{name!r} is not a topology name: use 1 to 64 letters, digits, '.', '_' or '-', and "
        "not '.' or '..' alone; rename the topology"
    )
