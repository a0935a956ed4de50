"""Heron's groupings through the heronpy API: one spout of ``[seq, key]`` (``inputs``: the
seqs, key ``seq % 7``), one three-task bolt per grouping, each sending
``[component, task index, seq]`` on to the sink ``sink``."""

from __future__ import annotations

from functools import partial
from typing import Any

from _modes import SEP, JsonSink

from headwater import Topology, global_
from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.custom_grouping import ICustomGrouping
from headwater.heronpy.api.spout.spout import Spout
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import TopologyBuilder

GROUPINGS = ("shuffle", "fields", "all", "lowest", "custom")


class SeqSpout(Spout):
    outputs = ["seq", "key"]

    SEQS: list[int] = []

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.todo = list(self.SEQS)

    def next_tuple(self) -> None:
        if self.todo:
            seq = self.todo.pop(0)
            self.emit([seq, seq % 7])


class EvenOdd(ICustomGrouping):
    """Even seqs to the first task, odd ones to the second."""

    def prepare(self, context: Any, component: str, stream: str, target_tasks: list[int]) -> None:
        self.tasks = target_tasks

    def choose_tasks(self, values: list[Any]) -> list[int]:
        return [self.tasks[values[0] % 2]]


class Where(Bolt):
    """Sends on which of its component's tasks each seq reached (the component's name
    without its case's suffix)."""

    outputs = ["component", "index", "seq"]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        component = context.get_component_id()
        self.component = component.rsplit(SEP, 1)[0]
        tasks = sorted(context.get_component_tasks(component))
        self.index = tasks.index(context.get_task_id())

    def process(self, tup: Any) -> None:
        self.emit([self.component, self.index, tup.values[0]])
        self.ack(tup)


def build(case: dict[str, Any]) -> Topology:
    x = case["suffix"]
    spout_class = type("CaseSeqSpout", (SeqSpout,), {"SEQS": list(case["inputs"])})
    builder = TopologyBuilder("heron-groupings")
    spout = builder.add_spout(f"seq{x}", spout_class, par=1)
    grouping = {
        "shuffle": Grouping.SHUFFLE,
        "fields": Grouping.fields("key"),
        "all": Grouping.ALL,
        "lowest": Grouping.LOWEST,
        "custom": Grouping.custom(EvenOdd()),
    }
    for name in GROUPINGS:
        builder.add_bolt(f"{name}{x}", Where, par=3, inputs={spout: grouping[name]})
    native: Topology = builder.__headwater_topology__()
    return native.add_bolt(
        f"sink{x}",
        partial(JsonSink, case["out"]),
        inputs={f"{name}{x}": global_() for name in GROUPINGS},
    )
