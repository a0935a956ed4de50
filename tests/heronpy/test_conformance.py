"""heronpy conformance: one test per difference from Heron's heronpy API (issue 19).

Each runs the heronpy-style code a Heron user writes, with only the import prefix
changed, in this process (``LocalRun``, ``TestContext``); the examples and the
integration-test protocol run on real clusters in ``test_heron_examples.py``. What
each test needs beyond what the module imports it imports itself, so that each
fails on its own difference.
"""

from __future__ import annotations

import importlib
import json
import logging
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.common._clock import ManualClock
from headwater.common.api import Tuple
from headwater.common.plan import load_topology, validate
from headwater.heronpy.api import api_constants
from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.component.component_spec import HeronComponentSpec
from headwater.heronpy.api.custom_grouping import ICustomGrouping
from headwater.heronpy.api.spout.spout import Spout
from headwater.heronpy.api.stream import Grouping, Stream
from headwater.heronpy.api.topology import Topology, TopologyBuilder, TopologyType
from headwater.heronpy.streamlet.builder import Builder
from headwater.heronpy.streamlet.config import Config
from headwater.heronpy.streamlet.generator import Generator
from headwater.heronpy.streamlet.windowconfig import WindowConfig
from headwater.testing import LocalRun, TestContext

ALO = {api_constants.TOPOLOGY_RELIABILITY_MODE: "ATLEAST_ONCE"}


class NumberSpout(Spout):
    """Emits 1..COUNT with the number as its tup_id, then nothing."""

    outputs = ["n"]
    COUNT = 6

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.next = 1
        self.acked: list[Any] = []

    def next_tuple(self) -> None:
        if self.next <= self.COUNT:
            self.emit([self.next], tup_id=self.next)
            self.next += 1

    def ack(self, tup_id: Any) -> None:
        self.acked.append(tup_id)


class AckBolt(Bolt):
    outputs = ["n"]

    def process(self, tup: Tuple) -> None:
        self.emit(tup.values, anchors=[tup])
        self.ack(tup)


class SinkBolt(Bolt):
    def process(self, tup: Tuple) -> None:
        self.ack(tup)


def _tup(n: int) -> Tuple:
    return Tuple(None, "src", "default", 1, [n], time.time())


# -- 1. the missing modules ---------------------------------------------------------------
def test_1_window_bolts_have_heron_windows_and_acking() -> None:
    from headwater.heronpy.api.bolt.window_bolt import (
        SlidingWindowBolt,
        TumblingWindowBolt,
        WindowContext,
    )

    class Collect:
        windows: list[tuple[WindowContext, list[int]]]

        def process_window(self, window_info: WindowContext, tuples: list[Tuple]) -> None:
            self.windows.append((window_info, [t.values[0] for t in tuples]))

    class Tumbling(Collect, TumblingWindowBolt):
        pass

    class Sliding(Collect, SlidingWindowBolt):
        pass

    now = [100.0]
    spec = Tumbling.spec("t", inputs=["src"], config={Tumbling.WINDOW_DURATION_SECS: 5})
    assert spec.custom_config == {  # the tick that closes windows, as heronpy's initialize sets
        Tumbling.WINDOW_DURATION_SECS: 5,
        api_constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS: 5,
    }
    tumbling = Tumbling()
    tumbling._now = lambda: now[0]
    tumbling.windows = []
    ctx = TestContext(config=spec.custom_config)
    tumbling.open(ctx)
    for n in (1, 2, 3):
        tumbling.process(_tup(n))
    assert ctx.acked == []  # a window's tuples are acked once it is processed
    tumbling.on_tick(_tup(0))
    assert tumbling.windows == [(WindowContext(95, 100), [1, 2, 3])]
    assert [t.values[0] for t in ctx.acked] == [1, 2, 3]
    tumbling.on_tick(_tup(0))
    assert tumbling.windows[-1] == (WindowContext(95, 100), [])

    # sliding: 10 s windows every 5 s; a tuple is acked when it leaves its last window
    sliding = Sliding()
    sliding._now = lambda: now[0]
    sliding.windows = []
    config = {Sliding.WINDOW_DURATION_SECS: 10, Sliding.WINDOW_SLIDEINTERVAL_SECS: 5}
    assert (
        Sliding.spec("s", inputs=["src"], config=config).custom_config[
            api_constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS
        ]
        == 5
    )
    ctx = TestContext(config=config)
    sliding.open(ctx)
    sliding.process(_tup(1))  # at 100
    now[0] = 105
    sliding.process(_tup(2))
    sliding.on_tick(_tup(0))
    assert sliding.windows == [(WindowContext(95, 105), [1, 2])]
    now[0] = 111
    sliding.on_tick(_tup(0))  # 1 (at 100) has left [101, 111]
    assert sliding.windows[-1] == (WindowContext(101, 111), [1, 2])
    assert [t.values[0] for t in ctx.acked] == [1]
    now[0] = 116
    sliding.on_tick(_tup(0))
    assert sliding.windows[-1] == (WindowContext(106, 116), [2])
    assert [t.values[0] for t in ctx.acked] == [1, 2]
    with pytest.raises(ValueError, match="must not exceed"):
        Sliding.spec("s", inputs=["src"], config={**config, Sliding.WINDOW_DURATION_SECS: 2})
    with pytest.raises(ValueError, match="must set"):
        Tumbling.spec("t", inputs=["src"])


def test_1_window_bolts_also_count_windows() -> None:
    from headwater.heronpy.api.bolt.window_bolt import SlidingWindowBolt, TumblingWindowBolt

    class Sizes:
        windows: list[list[int]]

        def processWindow(self, window_info: Any, tuples: list[Tuple]) -> None:
            self.windows.append([t.values[0] for t in tuples])

    class Tumbling(Sizes, TumblingWindowBolt):
        pass

    class Sliding(Sizes, SlidingWindowBolt):
        pass

    tumbling_spec = Tumbling.spec("t", inputs=["src"], config={Tumbling.WINDOW_COUNT: 3})
    assert api_constants.TOPOLOGY_TICK_TUPLE_FREQ_SECS not in tumbling_spec.custom_config
    tumbling = Tumbling()
    tumbling.windows = []
    ctx = TestContext(config=tumbling_spec.custom_config)
    tumbling.open(ctx)
    for n in range(1, 8):
        tumbling.process(_tup(n))
    assert tumbling.windows == [[1, 2, 3], [4, 5, 6]]
    assert [t.values[0] for t in ctx.acked] == [1, 2, 3, 4, 5, 6]

    # 4 tuples every 2: each tuple is acked once no window to come holds it
    config = {Sliding.WINDOW_COUNT: 4, Sliding.WINDOW_SLIDE_COUNT: 2}
    sliding = Sliding()
    sliding.windows = []
    ctx = TestContext(config=config)
    sliding.open(ctx)
    for n in range(1, 8):
        sliding.process(_tup(n))
    assert sliding.windows == [[1, 2], [1, 2, 3, 4], [3, 4, 5, 6]]
    assert [t.values[0] for t in ctx.acked] == [1, 2, 3, 4]
    with pytest.raises(ValueError, match="not both"):
        Sliding.spec("s", inputs=["src"], config={**config, Sliding.WINDOW_DURATION_SECS: 5})
    with pytest.raises(ValueError, match="must not exceed"):
        Sliding.spec("s", inputs=["src"], config={**config, Sliding.WINDOW_SLIDE_COUNT: 5})


def test_1_metrics_serializer_task_hook_resources_and_streamlet_impl() -> None:
    from headwater.heronpy.api.metrics import (
        AssignableMetrics,
        CountMetric,
        MeanReducedMetric,
        MultiCountMetric,
    )
    from headwater.heronpy.api.serializer import default_serializer
    from headwater.heronpy.api.task_hook import ITaskHook
    from headwater.heronpy.streamlet.resources import Resources

    count = CountMetric()
    count.incr()
    count.incr(4)
    assert count.get_value_and_reset() == 5
    assert count.get_value_and_reset() == 0
    multi = MultiCountMetric()
    multi.add_key("a")
    multi.incr("b", 2)
    assert multi.get_value_and_reset() == {"a": 0, "b": 2}
    mean = MeanReducedMetric()
    assert mean.get_value_and_reset() is None
    mean.update(1)
    mean.update(2)
    assert mean.get_value_and_reset() == 1.5
    assigned = AssignableMetrics(3)
    assert assigned.get_value_and_reset() == 3 == assigned.get_value_and_reset()
    value = {"k": [1, 2.5, "x"]}
    assert default_serializer.deserialize(default_serializer.serialize(value)) == value
    for method in ("prepare", "clean_up", "emit", "spout_ack", "bolt_execute", "bolt_fail"):
        assert callable(getattr(ITaskHook, method))
    res = Resources().set_cpu(2).set_ram_in_gb(1)
    assert (res.get_cpu(), res.get_ram()) == (2.0, 1 << 30)
    assert repr(res) == "Resource {cpu: 2.000000, ram: 1073741824}"
    for module in ("impl", "impl.contextimpl", "impl.generatorspout", "resources"):
        importlib.import_module(f"headwater.heronpy.streamlet.{module}")


# -- 2. HeronComponentSpec: a class path, get_protobuf ---------------------------------------
def test_2_component_spec_takes_a_class_path_and_describes_itself() -> None:
    spout = HeronComponentSpec("numbers", f"{__name__}.NumberSpout", True, 2, outputs=["n"])
    bolt = HeronComponentSpec(
        "sink", f"{__name__}.SinkBolt", False, 1, inputs={spout: Grouping.fields("n")}
    )
    assert spout.python_class_path == f"{__name__}.NumberSpout"
    assert spout.to_native().factory is NumberSpout
    proto = bolt.get_protobuf()
    assert proto.comp.name == "sink"
    assert proto.comp.class_name == f"{__name__}.SinkBolt"
    assert [(kv.key, kv.value) for kv in proto.comp.config.kvs] == [
        (api_constants.TOPOLOGY_COMPONENT_PARALLELISM, "1")
    ]
    assert [(i.stream.component_name, i.stream.id) for i in proto.inputs] == [
        ("numbers", "default")
    ]
    assert [k.key for k in proto.inputs[0].grouping_fields.keys] == ["n"]
    out = spout.get_protobuf()
    assert out.inputs == []
    assert [(o.stream.id, [k.key for k in o.schema.keys]) for o in out.outputs] == [
        ("default", ["n"])
    ]
    assert NumberSpout.spec("x").python_class_path == f"{__name__}.NumberSpout"
    with pytest.raises(ImportError, match="cannot import"):
        HeronComponentSpec("bad", "no_such_module.Spout", True, 1).to_native()


# -- 3. TopologyType from any module, _construct_topo_class_dict, write() ---------------------
def test_3_topology_type_made_in_a_module_is_written_to_the_loader(tmp_path: Path) -> None:
    (tmp_path / "core_builder.py").write_text(
        "from headwater.heronpy.api.topology import Topology, TopologyType\n"
        "def make(builder):\n"
        "    return TopologyType(builder.topology_name, (Topology,),\n"
        "                        builder._construct_topo_class_dict())\n"
    )
    (tmp_path / "topo.py").write_text(
        "from core_builder import make\n"
        "from headwater.heronpy.api.topology import TopologyBuilder\n"
        f"from {__name__} import NumberSpout, SinkBolt\n"
        "b = TopologyBuilder('Made')\n"
        "s = b.add_spout('numbers', NumberSpout, par=1)\n"
        "b.add_bolt('sink', SinkBolt, par=1, inputs=[s])\n"
        "b.set_config({'topology.debug': True})\n"
        "cls = make(b)\n"
        "assert cls.__module__ == 'core_builder', cls.__module__\n"
        "cls.write()\n"
    )
    topo = load_topology(tmp_path / "topo.py")
    assert topo.name == "Made"
    assert [c.name for c in topo.components] == ["numbers", "sink"]
    assert topo.config["topology.debug"] is True
    builder = TopologyBuilder("T")
    spec = builder.add_spout("numbers", NumberSpout, par=1)
    assert builder._construct_topo_class_dict() == {"numbers": spec, "config": {}}
    with pytest.raises(ValueError, match="cannot be written"):
        Topology.write()


# -- 4. delegates ------------------------------------------------------------------------
class Delegate:
    def __init__(self) -> None:
        self.logger = logging.getLogger("delegate")
        self.calls: list[tuple[str, Any]] = []

    def emit(self, tup: Any, **kw: Any) -> list[int]:
        self.calls.append(("emit", (list(tup), kw)))
        return [7]

    def ack(self, tup: Any) -> None:
        self.calls.append(("ack", tup))

    def fail(self, tup: Any) -> None:
        self.calls.append(("fail", tup))


def test_4_a_delegated_component_works_through_its_delegate() -> None:
    delegate = Delegate()
    spout = NumberSpout(delegate=delegate)
    assert spout.logger is delegate.logger
    spout.initialize({}, None)  # its delegate initializes it, as Heron's integration core does
    spout.next_tuple()
    assert delegate.calls == [
        (
            "emit",
            ([1], {"tup_id": 1, "stream": "default", "direct_task": None, "need_task_ids": False}),
        )
    ]
    bolt = AckBolt(delegate=delegate)
    tup = _tup(5)
    bolt.process(tup)
    assert delegate.calls[1:] == [
        (
            "emit",
            (
                [5],
                {
                    "stream": "default",
                    "anchors": [tup],
                    "direct_task": None,
                    "need_task_ids": False,
                },
            ),
        ),
        ("ack", tup),
    ]
    bolt.fail(tup)
    assert delegate.calls[-1] == ("fail", tup)


# -- 5. `__` names --------------------------------------------------------------------------
def test_5_user_components_may_start_with_double_underscore() -> None:
    builder = TopologyBuilder("Agg")
    spout = builder.add_spout("numbers", NumberSpout, par=1)
    builder.add_bolt("__integration_test_aggregator_bolt", SinkBolt, par=1, inputs=[spout])
    builder.set_config(ALO)
    topo = builder.__headwater_topology__()
    validate(topo)
    run = LocalRun(topo).run()
    assert run.instances("numbers")[0].acked == [1, 2, 3, 4, 5, 6]  # type: ignore[union-attr]


# -- 6. custom grouping: prepare gets the source's name -------------------------------------
class FirstTask(ICustomGrouping):
    prepared: list[tuple[str, str, list[int]]] = []

    def prepare(self, context: Any, component: str, stream: str, target_tasks: list[int]) -> None:
        FirstTask.prepared.append((component, stream, target_tasks))
        self.tasks = target_tasks

    def choose_tasks(self, values: list[Any]) -> list[int]:
        return self.tasks[:1]


def test_6_custom_grouping_prepare_names_the_source() -> None:
    FirstTask.prepared = []
    builder = TopologyBuilder("Custom")
    spout = builder.add_spout("numbers", NumberSpout, par=1)
    builder.add_bolt("sink", SinkBolt, par=2, inputs={spout: Grouping.custom(FirstTask())})
    run = LocalRun(builder.__headwater_topology__()).run()
    sink_tasks = run.ids["sink"]
    assert FirstTask.prepared == [("numbers", "default", sink_tasks)]


# -- 7. streamlet Builder.build(topology_builder) -------------------------------------------
class Finite(Generator):
    def __init__(self, items: list[Any], delay: float = 0.0) -> None:
        self.items, self.delay, self.gets = list(items), delay, 0

    def setup(self, context: Any) -> None:
        self.left = list(self.items)

    def get(self) -> Any:
        self.gets += 1
        if self.delay:
            time.sleep(self.delay)
        return self.left.pop(0) if self.left else None


CONSUMED: list[Any] = []


def test_7_streamlet_builder_builds_into_a_topology_builder() -> None:
    CONSUMED.clear()
    builder = Builder()
    builder.new_source(Finite([1, 2, 3])).map(lambda x: x * 10).consume(CONSUMED.append)
    topology_builder = TopologyBuilder("Streamlets")
    assert builder.build(topology_builder) is topology_builder
    topo = topology_builder.__headwater_topology__()
    assert topo.name == "Streamlets"
    assert [c.name for c in topo.components] == ["generator-1"]  # one fused chain
    LocalRun(topo).run()
    assert CONSUMED == [10, 20, 30]


# -- 8. streamlet Config ---------------------------------------------------------------------
def test_8_streamlet_config_methods_and_constants() -> None:
    from headwater.heronpy.streamlet.resources import Resources

    config = Config()
    config.set_delivery_semantics(Config.EFFECTIVELY_ONCE)
    config.set_num_containers(3)
    config.set_container_resources(Resources().set_cpu(1.5).set_ram_in_mb(512))
    config.set_user_config("my.key", "v")
    assert config._api_config == {
        api_constants.TOPOLOGY_RELIABILITY_MODE: "EFFECTIVELY_ONCE",
        api_constants.TOPOLOGY_STMGRS: 3,
        api_constants.TOPOLOGY_CONTAINER_CPU_REQUESTED: 1.5,
        api_constants.TOPOLOGY_CONTAINER_RAM_REQUESTED: 512 << 20,
        "my.key": "v",
    }
    assert (Config.ATMOST_ONCE, Config.ATLEAST_ONCE) == (1, 2)
    with pytest.raises(RuntimeError, match="Unknown"):
        config.set_delivery_semantics(9)
    with pytest.raises(RuntimeError):
        Config("not a dict")  # type: ignore[arg-type]


# -- 9. generator pacing ---------------------------------------------------------------------
def test_9_a_slow_generator_emits_each_element_as_it_comes() -> None:
    from headwater.heronpy.streamlet.impl.generatorspout import GeneratorSpout

    slow = Finite(list(range(10)), delay=0.02)  # each get() outlasts a call's budget
    spout = GeneratorSpout(slow.get, slow)
    ctx = TestContext(component="gen")
    spout.open(ctx)
    spout.next_tuple()
    assert (slow.gets, ctx.values()) == (1, [[0]])
    spout.next_tuple()
    assert (slow.gets, ctx.values()) == (2, [[0], [1]])
    quick = Finite(list(range(10)))
    spout = GeneratorSpout(quick.get, quick)
    ctx = TestContext(component="gen")
    spout.open(ctx)
    spout.next_tuple()  # a quick one still fills a batch, up to its first None
    assert ctx.values() == [[i] for i in range(10)]


# -- 10. headwater run FILE -- ARGS -----------------------------------------------------------
def test_10_run_passes_arguments_after_double_dash_as_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from headwater._run_cli import split_topology_args

    assert split_topology_args(["run", "t.py", "--containers", "2", "--", "Name", "-x"]) == (
        ["run", "t.py", "--containers", "2"],
        ["Name", "-x"],
    )
    assert split_topology_args(["status", "--", "x"]) == (["status", "--", "x"], [])
    file = tmp_path / "named.py"
    file.write_text(
        "import sys\n"
        "from headwater.heronpy.api.topology import TopologyBuilder\n"
        f"from {__name__} import NumberSpout\n"
        "if __name__ == '__main__':\n"
        "    if len(sys.argv) != 3:\n"
        "        sys.exit(1)\n"
        "    b = TopologyBuilder(name=sys.argv[1])\n"
        "    b.add_spout(sys.argv[2], NumberSpout, par=1)\n"
        "    b.build_and_submit()\n"
    )
    monkeypatch.setenv("HEADWATER_TOPOLOGY_ARGS", json.dumps(["FromArgv", "src"]))
    topo = load_topology(file)
    assert (topo.name, [c.name for c in topo.components]) == ("FromArgv", ["src"])
    assert sys.argv[1:] != ["FromArgv", "src"]  # restored after loading


def test_10_run_help_documents_the_arguments(capsys: pytest.CaptureFixture[str]) -> None:
    from headwater._cli import main

    with pytest.raises(SystemExit):
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert "[-- ARGS ...]" in out and "sys.argv[1:]" in out


# -- 11. WindowConfig without the multiple --------------------------------------------------
def test_11_window_config_takes_any_slide() -> None:
    window = WindowConfig.create_sliding_window(10, 3)
    assigner, keep = window._assigner(), window._on_slide()
    assert keep is not None
    # the windows holding t = 20.5 s: those of 10 s that start on a multiple of 3 s
    starts = [s for s, e in assigner.assign(20_500) if keep({"start": s})]
    assert starts == [12_000, 15_000, 18_000]
    assert WindowConfig.create_sliding_window(10, 5)._on_slide() is None


# -- 12. log() as Heron's ------------------------------------------------------------------
def test_12_streamlet_log_prints_each_element_as_str(caplog: pytest.LogCaptureFixture) -> None:
    builder = Builder()
    builder.new_source(Finite([("a", 1), "b"])).log()
    topology_builder = TopologyBuilder("Logged")
    builder.build(topology_builder)
    with caplog.at_level(logging.INFO, logger="headwater.user"):
        LocalRun(topology_builder.__headwater_topology__()).run()
    assert [r.getMessage() for r in caplog.records if r.name.startswith("headwater.user")] == [
        "('a', 1)",
        "b",
    ]
    # a window operation's results print as Heron's, whether they come fused or as lists
    from headwater.heronpy.streamlet._translate import _LogOp

    for shape, element, printed in [
        (
            "keyed",
            [["w", [100.0, 110.0]], 3],
            "(KeyedWindow {key: w, window: Window {start_time: 100, end_time: 110}}, 3)",
        ),
        ("window", [[100.0, 110.5], 7], "(Window {start_time: 100, end_time: 110.5}, 7)"),
    ]:
        caplog.clear()
        op = _LogOp("log", shape)
        op.open(TestContext(component="log"))
        with caplog.at_level(logging.INFO, logger="headwater.user"):
            op.process(None, element, lambda k, v: None, None)
        assert [r.getMessage() for r in caplog.records] == [printed]


# -- 13. TopologyContext: hooks called, metrics reported -------------------------------------
SEEN: list[tuple[str, Any]] = []


def test_13_task_hooks_are_called_and_registered_metrics_reported(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from headwater.heronpy.api.metrics import CountMetric, MeanReducedMetric, MultiCountMetric
    from headwater.heronpy.api.task_hook import ITaskHook

    class Hook(ITaskHook):
        def __init__(self, seen: list[tuple[str, Any]]) -> None:
            self.seen = seen

        def prepare(self, conf: Any, context: Any) -> None:
            self.seen.append(("prepare", context.get_component_id()))

        def emit(self, emit_info: Any) -> None:
            self.seen.append(("emit", (emit_info.values, emit_info.stream_id)))

        def spout_ack(self, spout_ack_info: Any) -> None:
            assert spout_ack_info.complete_latency_ms >= 0
            self.seen.append(("spout_ack", spout_ack_info.message_id))

        def bolt_execute(self, bolt_execute_info: Any) -> None:
            self.seen.append(("bolt_execute", bolt_execute_info.heron_tuple.values))

        def bolt_ack(self, bolt_ack_info: Any) -> None:
            self.seen.append(("bolt_ack", bolt_ack_info.heron_tuple.values))

        def clean_up(self) -> None:
            self.seen.append(("clean_up", None))

    class HookedSpout(NumberSpout):
        COUNT = 2

        def initialize(self, config: dict[str, Any], context: Any) -> None:
            super().initialize(config, context)
            context.add_task_hook(Hook(SEEN))
            assert context.get_topology_pex_path() == "/topologies/file.py"

    class MeteredBolt(Bolt):
        def initialize(self, config: dict[str, Any], context: Any) -> None:
            context.add_task_hook(Hook(SEEN))
            self.count = CountMetric()
            self.per_value = MultiCountMetric()
            context.register_metric("seen", self.count, 60)
            context.get_metrics_collector().register_metric("by_value", self.per_value, 60)
            self.mean = MeanReducedMetric()
            context.register_metric("mean", self.mean, 60)

        def process(self, tup: Tuple) -> None:
            self.count.incr()
            self.per_value.incr(str(tup.values[0]))
            self.mean.update(tup.values[0])
            self.ack(tup)

    SEEN.clear()
    monkeypatch.setenv("HEADWATER_TOPOLOGY_FILE", "/topologies/file.py")
    builder = TopologyBuilder("Hooked")
    spout = builder.add_spout("numbers", HookedSpout, par=1)
    builder.add_bolt("metered", MeteredBolt, par=1, inputs=[spout])
    builder.set_config(ALO)
    run = LocalRun(builder.__headwater_topology__(), clock=ManualClock())
    run.run()
    counters = run.context("metered").counters
    assert counters == {"seen": 2, "by_value/1": 1, "by_value/2": 1}
    run.close()  # a last read of the metrics read by time bucket; hooks clean up
    assert run.context("metered").counters["mean"] == 1.5
    assert sorted(SEEN, key=str) == sorted(
        [
            ("prepare", "numbers"),
            ("prepare", "metered"),
            ("emit", ([1], "default")),
            ("emit", ([2], "default")),
            ("bolt_execute", [1]),
            ("bolt_execute", [2]),
            ("bolt_ack", [1]),
            ("bolt_ack", [2]),
            ("spout_ack", 1),
            ("spout_ack", 2),
            ("clean_up", None),
            ("clean_up", None),
        ],
        key=str,
    )
    assert Stream.DEFAULT_STREAM_ID == "default"
    assert issubclass(TopologyType, type)
