"""Heron's integration-test protocol, written fresh in heronpy style.

A test topology wraps the user's components: ``IntegrationTestSpout`` runs the
user's spout (made with ``delegate=self``, from its class path) a fixed number of
times, and once every tuple it emitted is acked or failed sends a terminal marker on
the control stream. ``IntegrationTestBolt`` runs the user's bolt the same way and
passes the marker on once it has one from every upstream task. The terminal
components feed ``__integration_test_aggregator_bolt``, which collects every tuple
they emit and, on the last marker, writes them to its output file: the run's result,
compared with the expected one.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

from headwater.heronpy.api import api_constants
from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.component.component_spec import HeronComponentSpec
from headwater.heronpy.api.spout.spout import Spout
from headwater.heronpy.api.stream import Grouping, Stream
from headwater.heronpy.api.topology import Topology, TopologyBuilder, TopologyType

CONTROL_STREAM = "__integration_test_control_stream"
TERMINAL = "__integration_test_terminal"
AGGREGATOR = "__integration_test_aggregator_bolt"
USER_CLASS = "integration_test.user.class"
MAX_EXECUTIONS = "integration_test.max.executions"
OUTPUT_FILE = "integration_test.output.file"


def load_class(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class IntegrationTestSpout(Spout):
    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.user = load_class(config[USER_CLASS])(delegate=self)
        self.left = int(config.get(MAX_EXECUTIONS, 0))
        self.pending: dict[int, Any] = {}  # our tup_id -> the user's
        self.ids = 0
        self.finished = False
        self.user.initialize(config, context)

    def next_tuple(self) -> None:
        if self.left > 0:
            self.left -= 1
            self.user.next_tuple()
        elif not self.finished and not self.pending:
            self.finished = True
            super().emit([TERMINAL], stream=CONTROL_STREAM)

    def emit(
        self,
        tup: Any,
        tup_id: Any = None,
        stream: str = "default",
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Every tuple the user's spout emits is tracked, so the marker waits for it."""
        self.ids += 1
        self.pending[self.ids] = tup_id
        return super().emit(tup, self.ids, stream, direct_task, need_task_ids)

    def ack(self, tup_id: Any) -> None:
        user_id = self.pending.pop(tup_id, None)
        if user_id is not None:
            self.user.ack(user_id)

    def fail(self, tup_id: Any) -> None:
        user_id = self.pending.pop(tup_id, None)
        if user_id is not None:
            self.user.fail(user_id)


class IntegrationTestBolt(Bolt):
    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.user = load_class(config[USER_CLASS])(delegate=self)
        sources = context.get_this_sources() or {}
        upstream = {s.component_name for s in sources if s.id == CONTROL_STREAM}
        self.expected = sum(len(context.get_component_tasks(c)) for c in upstream)
        self.markers = 0
        self.current: Any = None
        self.user.initialize(config, context)

    def process(self, tup: Any) -> None:
        if tup.stream == CONTROL_STREAM:
            self.markers += 1
            if self.markers == self.expected:
                finish = getattr(self.user, "finish_batch", None)
                if finish is not None:
                    finish()
                super().emit([TERMINAL], stream=CONTROL_STREAM)
            return
        self.current, self.acked = tup, False
        self.user.process(tup)
        if not self.acked:  # the user's bolt need not ack: the test's trees must end
            super().ack(tup)

    def emit(
        self,
        tup: Any,
        stream: str = "default",
        anchors: Any = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if anchors is None and self.current is not None:
            anchors = [self.current]
        return super().emit(tup, stream, anchors, direct_task, need_task_ids)

    def ack(self, tup: Any) -> None:
        self.acked = self.acked or tup is self.current
        super().ack(tup)

    def fail(self, tup: Any) -> None:
        self.acked = self.acked or tup is self.current
        super().fail(tup)


class AggregatorBolt(Bolt):
    """Collects what the terminal components emit; writes it all on the last marker."""

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.output = config[OUTPUT_FILE]
        self.results: list[Any] = []

    def process(self, tup: Any) -> None:
        self.results.append(list(tup.values))

    def finish_batch(self) -> None:
        tmp = f"{self.output}.tmp"
        with open(tmp, "w") as f:
            json.dump(self.results, f)
        os.replace(tmp, self.output)


class TestTopologyBuilder(TopologyBuilder):
    """``add_spout`` / ``add_bolt`` wrap the user's classes; ``create_topology`` links the
    control stream and the aggregator and returns the ``Topology`` class to ``write()``."""

    __test__ = False  # not a pytest class

    def __init__(self, name: str, output_file: str) -> None:
        super().__init__(name)
        self.output_file = output_file
        self.set_config(
            {
                api_constants.TOPOLOGY_RELIABILITY_MODE: "ATLEAST_ONCE",
                api_constants.TOPOLOGY_MAX_SPOUT_PENDING: 1000,
            }
        )
        self.spouts: dict[str, HeronComponentSpec] = {}
        self.bolts: dict[str, HeronComponentSpec] = {}

    def _wrapped(
        self, name: str, test_cls: type, user_cls: Any, par: int, config: Any, inputs: Any = None
    ) -> HeronComponentSpec:
        user_spec = user_cls.spec(name)  # its python_class_path, as Heron's core takes it
        outputs = [*user_spec.outputs, Stream(["marker"], name=CONTROL_STREAM)]
        conf = {**(config or {}), USER_CLASS: user_spec.python_class_path}
        is_spout = inputs is None
        spec = HeronComponentSpec(name, _path(test_cls), is_spout, par, inputs, outputs, conf)
        self.add_spec(spec)
        (self.spouts if is_spout else self.bolts)[name] = spec
        return spec

    def add_spout(
        self, name: str, spout_cls: Any, par: int, config: Any = None, max_executions: int = 0
    ) -> HeronComponentSpec:
        conf = {**(config or {}), MAX_EXECUTIONS: max_executions}
        return self._wrapped(name, IntegrationTestSpout, spout_cls, par, conf)

    def add_bolt(  # type: ignore[override]
        self, name: str, bolt_cls: Any, par: int, inputs: dict[Any, Any], config: Any = None
    ) -> HeronComponentSpec:
        if not isinstance(inputs, dict):
            raise TypeError("integration-test bolts take dict inputs")
        return self._wrapped(name, IntegrationTestBolt, bolt_cls, par, config, inputs)

    def create_topology(self) -> type[Topology]:
        aggregator = self.add_bolt(
            AGGREGATOR, AggregatorBolt, 1, inputs={}, config={OUTPUT_FILE: self.output_file}
        )
        specs = {**self.spouts, **self.bolts}
        parents = {
            name: {i.stream.component_name for i in spec.get_protobuf().inputs}
            for name, spec in self.bolts.items()
            if name != AGGREGATOR
        }
        fed = set().union(*parents.values())
        for child, sources in parents.items():
            for source in sources:
                self.bolts[child].inputs[specs[source][CONTROL_STREAM]] = Grouping.ALL
        for name, spec in specs.items():
            if name == AGGREGATOR or name in fed:
                continue
            for stream in spec.get_out_streamids():  # user streams and the markers
                aggregator.inputs[spec[stream]] = Grouping.ALL
        made: type[Topology] = TopologyType(
            self.topology_name, (Topology,), self._construct_topo_class_dict()
        )
        return made
