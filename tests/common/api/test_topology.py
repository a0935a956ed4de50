"""headwater.common.api._topology: the immutable Topology builder."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from headwater.common._exceptions import InvalidTopologyError
from headwater.common.api import (
    DEFAULT_STREAM,
    Bolt,
    ComponentSpec,
    Input,
    Placement,
    Spout,
    Stream,
    Topology,
    all_tasks,
    fields,
    global_,
    shuffle,
)


class Words(Spout):
    outputs = ("word", Stream(("reason",), name="error"))

    def next_tuple(self) -> None:
        pass


class Count(Bolt):
    outputs = ("word", "count")

    def process(self, tup: Any) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def test_add_spout_returns_a_new_topology() -> None:
    empty = Topology("wc")
    one = empty.add_spout("words", Words)
    assert one is not empty
    assert empty.components == ()
    assert [c.name for c in one.components] == ["words"]
    two = one.add_bolt("count", Count, inputs={"words": shuffle()})
    assert [c.name for c in one.components] == ["words"]
    assert [c.name for c in two.components] == ["words", "count"]


def test_topology_is_frozen() -> None:
    topo = Topology("wc").add_spout("words", Words)
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.name = "other"  # type: ignore[misc]
    with pytest.raises(TypeError):
        cast(Any, topo.config)["k"] = 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        topo.components[0].parallelism = 5  # type: ignore[misc]


def test_config_is_copied_from_the_callers_mapping() -> None:
    conf = {"topology.debug": True}
    topo = Topology("t", config=conf)
    conf["topology.debug"] = False
    assert topo.config["topology.debug"] is True


def test_with_config_returns_a_copy() -> None:
    base = Topology("t", config={"a": 1})
    updated = base.with_config(b=2)
    assert dict(base.config) == {"a": 1}
    assert dict(updated.config) == {"a": 1, "b": 2}
    assert dict(base.with_config(**{"topology.debug": True}).config) == {
        "a": 1,
        "topology.debug": True,
    }


def test_merged_config_overlays_component_config() -> None:
    topo = Topology("t", config={"a": 1, "b": 1}).add_spout("words", Words, config={"b": 2, "c": 3})
    assert topo.merged_config("words") == {"a": 1, "b": 2, "c": 3}


def test_component_config_is_copied() -> None:
    conf = {"x": 1}
    topo = Topology("t").add_spout("words", Words, config=conf)
    conf["x"] = 2
    assert topo.component("words").config == {"x": 1}


def test_spec_fields() -> None:
    topo = Topology("t").add_spout(
        "words", Words, parallelism=3, placement=Placement("edge", {"site": "a"})
    )
    spec = topo.component("words")
    assert isinstance(spec, ComponentSpec)
    assert spec.kind == "spout"
    assert spec.factory is Words
    assert spec.parallelism == 3
    assert spec.inputs == ()
    assert spec.placement == Placement("edge", {"site": "a"})
    assert Topology("t").add_spout("w", Words).component("w").placement == Placement()


def test_component_lookup_unknown_raises_key_error() -> None:
    with pytest.raises(KeyError):
        Topology("t").component("missing")


def test_outputs_taken_from_class_attribute() -> None:
    topo = Topology("t").add_spout("words", Words)
    spec = topo.component("words")
    assert spec.outputs == (Stream(("word",)), Stream(("reason",), name="error"))
    assert spec.stream(DEFAULT_STREAM) == Stream(("word",))
    assert spec.stream("error") == Stream(("reason",), name="error")
    assert spec.stream("nope") is None


def test_string_outputs_form_one_default_stream() -> None:
    spec = (
        Topology("t")
        .add_spout("w", Words)
        .add_bolt("count", Count, inputs={"w": shuffle()})
        .component("count")
    )
    assert spec.outputs == (Stream(("word", "count")),)


def test_explicit_outputs_override_class_attribute() -> None:
    topo = Topology("t").add_spout("words", Words, outputs=[Stream(("x", "y"), name="xy")])
    assert topo.component("words").outputs == (Stream(("x", "y"), name="xy"),)
    plain = Topology("t").add_spout("words", Words, outputs=["a", "b"])
    assert plain.component("words").outputs == (Stream(("a", "b")),)


def test_factory_without_outputs_attribute() -> None:
    def make() -> Sink:
        return Sink()

    topo = Topology("t").add_spout("w", Words).add_bolt("s", make, inputs={"w": shuffle()})
    assert topo.component("s").outputs == ()


def test_inputs_as_mapping_of_names() -> None:
    topo = (
        Topology("t")
        .add_spout("words", Words)
        .add_bolt("count", Count, inputs={"words": fields("word")})
    )
    assert topo.component("count").inputs == (Input("words", DEFAULT_STREAM, fields("word")),)


def test_inputs_as_mapping_of_component_stream_tuples() -> None:
    topo = (
        Topology("t")
        .add_spout("words", Words)
        .add_bolt(
            "sink",
            Sink,
            inputs={("words", "error"): all_tasks(), ("words", DEFAULT_STREAM): global_()},
        )
    )
    assert topo.component("sink").inputs == (
        Input("words", "error", all_tasks()),
        Input("words", DEFAULT_STREAM, global_()),
    )


def test_inputs_as_input_list() -> None:
    inputs = [Input("words"), Input("words", "error", fields("reason"))]
    topo = Topology("t").add_spout("words", Words).add_bolt("sink", Sink, inputs=inputs)
    spec = topo.component("sink")
    assert spec.inputs == tuple(inputs)
    assert spec.inputs[0].stream == DEFAULT_STREAM
    assert spec.inputs[0].grouping == shuffle()


def test_fields_accepts_names_or_a_sequence() -> None:
    as_list = fields(["a", "b"])
    as_tuple = fields(("a", "b"))
    assert fields("a", "b") == as_list == as_tuple
    assert fields("a", "b").fields == ("a", "b")
    assert str(fields("a", "b")) == "fields(a, b)"
    assert str(shuffle()) == "shuffle"


def test_duplicate_names_raise_with_a_hint() -> None:
    topo = Topology("wc").add_spout("words", Words)
    with pytest.raises(InvalidTopologyError) as info:
        topo.add_bolt("words", Count, inputs={"words": shuffle()})
    assert "do you have two components with the same name" in str(info.value)
    assert "'words'" in str(info.value)
    assert info.value.topology == "wc"
    assert len(info.value.problems) == 1
    # the original is untouched
    assert [c.name for c in topo.components] == ["words"]


def test_duplicate_spout_names_raise() -> None:
    with pytest.raises(InvalidTopologyError, match="same name"):
        Topology("t").add_spout("a", Words).add_spout("a", Words)


def test_dead_letters_reach_the_sink_from_every_bolt_added_before_or_after() -> None:
    from headwater.common.api import DEAD_LETTER_FIELDS, DEAD_LETTERS
    from headwater.common.api._topology import edge
    from headwater.common.plan import cloud_part, edge_part, validate

    t = (
        Topology("t")
        .add_spout("words", Words, placement=edge())  # a plain spout: no user steps, no letters
        .add_bolt("count", Count, inputs={"words": shuffle()}, placement=edge())
        .with_dead_letters("dead", Count)
        .add_bolt("total", Count, inputs={"count": shuffle()})
    )
    validate(t)
    assert t.dead_letters == "dead"
    dead = t.component("dead")
    assert [(i.component, i.stream) for i in dead.inputs] == [
        ("count", DEAD_LETTERS),
        ("total", DEAD_LETTERS),
    ]
    assert t.component("count").stream(DEAD_LETTERS) == Stream(DEAD_LETTER_FIELDS, DEAD_LETTERS)
    assert t.component("count").outputs == (Stream(("word", "count")),)  # declared ones only
    # an edge component's dead letters cross to the cloud with its other streams
    up = cloud_part(t).component("count")
    assert [s.name for s in up.outputs] == [DEFAULT_STREAM, DEAD_LETTERS]
    assert "__outbox__count" in [c.name for c in edge_part(t, {}).components]


def test_an_edge_dead_letter_sink_takes_its_own_subgraphs_letters_only() -> None:
    from headwater.common.api._topology import edge

    t = (
        Topology("t")
        .add_spout("words", Words)
        .add_bolt("cloudy", Count, inputs={"words": shuffle()})
        .add_spout("gw", Words, placement=edge(site="a"))
        .add_bolt("local", Count, inputs={"gw": shuffle()}, placement=edge(site="a"))
        .with_dead_letters("dead", Count, placement=edge(site="a"))
    )
    assert [i.component for i in t.component("dead").inputs] == ["local"]
