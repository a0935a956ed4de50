"""headwater.heronpy: the heronpy 0.20.5 compatibility layer."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

from headwater.common.api import DEFAULT_STREAM, Input, Reliability, RuntimeConfig, Tuple
from headwater.common.api import Stream as NativeStream
from headwater.common.api import Topology as NativeTopology
from headwater.common.api import _stream as native
from headwater.common.plan import validate
from headwater.heronpy.api import api_constants, global_metrics
from headwater.heronpy.api.bolt.base_bolt import BaseBolt
from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.component.component_spec import GlobalStreamId, HeronComponentSpec
from headwater.heronpy.api.custom_grouping import ICustomGrouping
from headwater.heronpy.api.spout.base_spout import BaseSpout
from headwater.heronpy.api.spout.spout import Spout
from headwater.heronpy.api.stream import Grouping, Stream
from headwater.heronpy.api.topology import Topology, TopologyBuilder
from headwater.heronpy.api.topology_context import TopologyContext
from headwater.heronpy.api.tuple import HeronTuple, TupleHelper


class WordSpout(Spout):
    outputs = ["word", Stream(fields=["reason"], name="error")]

    def next_tuple(self) -> None:
        pass


class CountBolt(Bolt):
    outputs = ["word", "count"]

    def process(self, tup: Any) -> None:
        pass


class ErrorBolt(Bolt):
    def process(self, tup: Any) -> None:
        pass


class Chooser:
    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        self.tasks = target_tasks

    def choose_tasks(self, values: list[object]) -> list[int]:
        return self.tasks[:1]


def _streams(topo: NativeTopology, name: str) -> list[tuple[str, tuple[str, ...], bool]]:
    return [(s.name, s.fields, s.direct) for s in topo.component(name).outputs]


# -- class-style Topology ------------------------------------------------------------
class WordCount(Topology):
    config = {"topology.message.timeout.secs": 10}
    spout = WordSpout.spec(par=2)
    count = CountBolt.spec(inputs={spout: Grouping.fields("word")}, par=3)
    errors = ErrorBolt.spec(inputs={spout["error"]: Grouping.SHUFFLE})


def test_class_topology_converts_to_native() -> None:
    topo = WordCount.__headwater_topology__()
    assert isinstance(topo, NativeTopology)
    assert topo.name == "WordCount"
    assert [c.name for c in topo.components] == ["spout", "count", "errors"]
    assert [c.kind for c in topo.components] == ["spout", "bolt", "bolt"]
    assert [c.parallelism for c in topo.components] == [2, 3, 1]
    assert topo.component("spout").factory is WordSpout
    assert topo.component("count").factory is CountBolt
    assert topo.component("spout").inputs == ()
    assert topo.component("count").inputs == (
        Input("spout", DEFAULT_STREAM, native.fields("word")),
    )
    assert topo.component("errors").inputs == (Input("spout", "error", native.shuffle()),)
    validate(topo)


def test_outputs_strings_form_default_stream_and_named_streams_are_kept() -> None:
    topo = WordCount.__headwater_topology__()
    assert topo is not None
    assert _streams(topo, "spout") == [("default", ("word",), False), ("error", ("reason",), False)]
    assert _streams(topo, "count") == [("default", ("word", "count"), False)]
    assert _streams(topo, "errors") == []
    error = topo.component("spout").stream("error")
    assert isinstance(error, NativeStream)


def test_class_config_overrides_heronpy_defaults() -> None:
    topo = WordCount.__headwater_topology__()
    assert topo is not None
    assert topo.config["topology.message.timeout.secs"] == 10
    assert topo.config["topology.max.spout.pending"] == 100
    assert topo.config["topology.reliability.mode"] == "ATMOST_ONCE"


def test_base_topology_and_empty_subclass_convert_to_none() -> None:
    class Empty(Topology):
        pass

    assert Topology.__headwater_topology__() is None
    assert Empty.__headwater_topology__() is None


def test_class_topology_explicit_spec_name() -> None:
    class Named(Topology):
        s = WordSpout.spec(name="the-spout")
        b = CountBolt.spec(name="the-bolt", inputs=[s])

    topo = Named.__headwater_topology__()
    assert topo is not None
    assert [c.name for c in topo.components] == ["the-spout", "the-bolt"]
    assert topo.component("the-bolt").inputs == (Input("the-spout", DEFAULT_STREAM),)


def test_class_topology_duplicate_names() -> None:
    with pytest.raises(ValueError, match="Duplicate component name"):

        class Dup(Topology):
            a = WordSpout.spec(name="x")
            b = WordSpout.spec(name="x")


# -- TopologyBuilder -----------------------------------------------------------------
def _builder() -> TopologyBuilder:
    builder = TopologyBuilder("wc")
    words = builder.add_spout("words", WordSpout, par=2)
    builder.add_bolt("count", CountBolt, par=3, inputs={words: Grouping.fields("word")})
    builder.add_bolt("errors", ErrorBolt, par=1, inputs={words["error"]: Grouping.ALL})
    return builder


def test_builder_converts_to_native() -> None:
    topo = _builder().__headwater_topology__()
    assert topo.name == "wc"
    assert [(c.name, c.kind, c.parallelism) for c in topo.components] == [
        ("words", "spout", 2),
        ("count", "bolt", 3),
        ("errors", "bolt", 1),
    ]
    assert topo.component("count").inputs == (
        Input("words", DEFAULT_STREAM, native.fields("word")),
    )
    assert topo.component("errors").inputs == (Input("words", "error", native.all_tasks()),)
    assert _streams(topo, "words") == [("default", ("word",), False), ("error", ("reason",), False)]
    validate(topo)


def test_builder_heronpy_default_config() -> None:
    topo = _builder().__headwater_topology__()
    assert dict(topo.config) == {
        "topology.message.timeout.secs": 30,
        "topology.max.spout.pending": 100,
        "topology.reliability.mode": "ATMOST_ONCE",
    }
    rc = RuntimeConfig.from_mapping(topo.config)
    assert rc.max_spout_pending == 100
    assert rc.reliability is Reliability.AT_MOST_ONCE
    assert not rc.acking


def test_builder_set_config_overrides_defaults() -> None:
    builder = _builder()
    builder.set_config(
        {
            api_constants.TOPOLOGY_RELIABILITY_MODE: (
                api_constants.TopologyReliabilityMode.ATLEAST_ONCE
            ),
            api_constants.TOPOLOGY_MAX_SPOUT_PENDING: 5,
        }
    )
    rc = RuntimeConfig.from_mapping(builder.__headwater_topology__().config)
    assert rc.reliability is Reliability.AT_LEAST_ONCE
    assert rc.max_spout_pending == 5
    with pytest.raises(TypeError):
        builder.set_config([("a", 1)])  # type: ignore[arg-type]


def test_builder_string_and_list_inputs() -> None:
    builder = TopologyBuilder("t")
    builder.add_spout("words", WordSpout, par=1)
    builder.add_bolt("a", CountBolt, par=1, inputs={"words": Grouping.LOWEST})
    builder.add_bolt("b", ErrorBolt, par=1, inputs=["words", "a"])
    topo = builder.__headwater_topology__()
    assert topo.component("a").inputs == (Input("words", DEFAULT_STREAM, native.global_()),)
    assert topo.component("b").inputs == (Input("words"), Input("a"))


def test_builder_optional_outputs_and_component_config() -> None:
    builder = TopologyBuilder("t")
    builder.add_spout(
        "words", WordSpout, par=1, config={"k": "v"}, optional_outputs=[Stream(["x"], "extra")]
    )
    topo = builder.__headwater_topology__()
    assert [s.name for s in topo.component("words").outputs] == ["default", "error", "extra"]
    assert topo.component("words").config == {"k": "v"}
    assert WordSpout.outputs == ["word", Stream(fields=["reason"], name="error")]


def test_builder_rejects_bad_specs() -> None:
    builder = _builder()
    with pytest.raises(ValueError, match="Duplicate component name"):
        builder.add_spout("words", WordSpout, par=1)
    with pytest.raises(ValueError, match="reserved"):
        builder.add_spout("config", WordSpout, par=1)
    with pytest.raises(ValueError, match="without name"):
        builder.add_spec(WordSpout.spec())
    with pytest.raises(TypeError):
        builder.add_spec("words")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TopologyBuilder("Topology")


def test_spec_attributes_and_stream_ids() -> None:
    spec = WordSpout.spec(name="w", par=4)
    assert isinstance(spec, HeronComponentSpec)
    assert spec.is_spout
    assert spec.parallelism == 4
    assert spec.get_out_streamids() == {"default", "error"}
    assert spec.python_class_path.endswith("WordSpout")
    with pytest.raises(ValueError):
        spec["nope"]
    with pytest.raises(ValueError):
        WordSpout.spec(par=0)


def test_global_stream_id() -> None:
    spec = WordSpout.spec(name="w")
    gsid = spec["error"]
    assert isinstance(gsid, GlobalStreamId)
    assert gsid.component_id == "w"
    assert gsid.stream_id == "error"
    assert str(gsid) == "w:error"
    assert gsid == GlobalStreamId("w", "error")
    assert hash(gsid) == hash(GlobalStreamId("w", "error"))
    with pytest.raises(TypeError):
        GlobalStreamId(1, "s")
    with pytest.raises(TypeError):
        GlobalStreamId("w", 2)  # type: ignore[arg-type]


def test_bad_grouping_in_inputs() -> None:
    builder = TopologyBuilder("t")
    words = builder.add_spout("words", WordSpout, par=1)
    builder.add_bolt("b", ErrorBolt, par=1, inputs={words: "shuffle"})
    with pytest.raises(ValueError, match="grouping is not supported"):
        builder.__headwater_topology__()


# -- Stream / Grouping ---------------------------------------------------------------
def test_stream_defaults() -> None:
    s = Stream()
    assert s.fields == ()
    assert s.name == DEFAULT_STREAM == Stream.DEFAULT_STREAM_ID
    assert s.stream_id == "default"
    assert not s.direct
    d = Stream(fields=("a", "b"), name="d", direct=True)
    assert (d.fields, d.stream_id, d.direct) == (("a", "b"), "d", True)
    assert isinstance(d, NativeStream)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"fields": "word"},
        {"fields": ["ok", 1]},
        {"fields": {"a": 1}},
        {"name": None},
        {"name": 3},
        {"direct": "yes"},
    ],
)
def test_stream_type_errors(kwargs: dict[str, Any]) -> None:
    with pytest.raises(TypeError):
        Stream(**kwargs)


def test_grouping_constants() -> None:
    assert native.shuffle() == Grouping.SHUFFLE
    assert native.all_tasks() == Grouping.ALL
    assert native.global_() == Grouping.LOWEST == Grouping.GLOBAL
    assert native.none() == Grouping.NONE
    assert native.direct() == Grouping.DIRECT
    assert native.shuffle() == Grouping.LOCAL_OR_SHUFFLE


def test_grouping_fields() -> None:
    assert Grouping.fields("a") == native.fields("a")
    assert Grouping.fields("a", "b") == native.fields("a", "b")
    assert Grouping.fields(["a", "b"]) == native.fields("a", "b")
    with pytest.raises(ValueError):
        Grouping.fields()
    with pytest.raises(ValueError):
        Grouping.fields([])
    with pytest.raises(TypeError):
        Grouping.fields(1)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        Grouping.fields(["a", 2])  # type: ignore[list-item]


def test_grouping_custom() -> None:
    chooser = Chooser()
    g = Grouping.custom(chooser)
    assert g.kind == "custom"
    assert g.custom is chooser
    by_path = Grouping.custom(f"{__name__}.Chooser")
    assert isinstance(by_path.custom, Chooser)
    with pytest.raises(TypeError):
        Grouping.custom(object())
    assert Grouping.is_grouping_sane(g)
    assert not Grouping.is_grouping_sane("shuffle")


def test_icustom_grouping_matches_the_native_protocol() -> None:
    class Mine(ICustomGrouping):
        def choose_tasks(self, values: list[object]) -> list[int]:
            return [1]

    assert Grouping.custom(Mine()).kind == "custom"


# -- module layout -------------------------------------------------------------------
@pytest.mark.parametrize(
    "module",
    [
        "api_constants",
        "stream",
        "custom_grouping",
        "topology",
        "topology_context",
        "tuple",
        "component.component_spec",
        "component.base_component",
        "spout.spout",
        "spout.base_spout",
        "bolt.bolt",
        "bolt.base_bolt",
        "global_metrics",
    ],
)
def test_module_paths_mirror_heronpy_api(module: str) -> None:
    importlib.import_module(f"headwater.heronpy.api.{module}")


def test_heronpy_names_exist() -> None:
    assert BaseBolt is Bolt
    assert BaseSpout is Spout
    assert api_constants.TopologyReliabilityMode.EFFECTIVELY_ONCE == "EFFECTIVELY_ONCE"
    assert api_constants.TOPOLOGY_MAX_SPOUT_PENDING == "topology.max.spout.pending"
    assert TupleHelper.TICK_TUPLE_ID == "__tick"
    assert TupleHelper.TICK_SOURCE_COMPONENT == "__system"
    assert HeronTuple.__name__ == "Tuple"
    assert callable(global_metrics.incr)
    assert TopologyContext.__name__ == "TopologyContext"


def test_bolt_is_tick() -> None:
    assert Bolt.is_tick(Tuple(None, "__system", "__tick", -1, [], 0.0))
    assert not Bolt.is_tick(Tuple(None, "s", "default", 1, [], 0.0))


def test_base_component_log_levels() -> None:
    bolt = CountBolt()
    bolt.log("hello")
    bolt.log("hello", level="debug")
    with pytest.raises(ValueError, match="not supported"):
        bolt.log("hello", level="loud")
