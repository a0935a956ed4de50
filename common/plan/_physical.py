"""Task assignment and packing: the physical plan (instances -> containers).

Task ids depend on the logical plan alone (components in declaration order,
consecutive ids from 1), so every process derives the same ids without
asking; only the container of each task comes from the packer.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from ..api import Topology

DSL_STEPS = "headwater.dsl.steps"  # component config: the DSL steps fused into it


@dataclass(frozen=True)
class InstancePlacement:
    task_id: int
    component: str
    index: int  # 0-based index among the component's tasks
    container: int


@dataclass(frozen=True)
class PhysicalPlan:
    """Which instance of which component runs in which container."""

    topology: str
    containers: int
    instances: tuple[InstancePlacement, ...]
    # component -> the DSL steps fused into it (components written as spouts/bolts: absent)
    fused: tuple[tuple[str, tuple[str, ...]], ...] = ()

    @cached_property
    def _by_task(self) -> dict[int, InstancePlacement]:
        return {i.task_id: i for i in self.instances}

    def instance(self, task_id: int) -> InstancePlacement:
        return self._by_task[task_id]

    def container_of(self, task_id: int) -> int:
        return self._by_task[task_id].container

    def in_container(self, container: int) -> Iterator[InstancePlacement]:
        return (i for i in self.instances if i.container == container)

    def tasks(self, component: str) -> list[int]:
        return [i.task_id for i in self.instances if i.component == component]

    def to_dict(self) -> dict[str, object]:
        return {
            "topology": self.topology,
            "containers": self.containers,
            "instances": [
                {
                    "task": i.task_id,
                    "component": i.component,
                    "index": i.index,
                    "container": i.container,
                }
                for i in self.instances
            ],
            "fused": {component: list(steps) for component, steps in self.fused},
        }


def task_ids(topology: Topology) -> dict[str, list[int]]:
    """Component name -> its sorted task ids."""
    out: dict[str, list[int]] = {}
    next_id = 1
    for comp in topology.components:
        out[comp.name] = list(range(next_id, next_id + comp.parallelism))
        next_id += comp.parallelism
    return out


def pack_round_robin(topology: Topology, containers: int) -> PhysicalPlan:
    """Deal instances to containers in turn, as Heron's round-robin packing does."""
    if containers < 1:
        raise ValueError(f"containers must be 1 or more, got {containers}")
    placements = []
    n = 0
    for comp in topology.components:
        for index, task in enumerate(task_ids(topology)[comp.name]):
            placements.append(InstancePlacement(task, comp.name, index, n % containers))
            n += 1
    fused = tuple((c.name, tuple(c.config[DSL_STEPS])) for c in topology.components
                  if DSL_STEPS in c.config)  # fmt: skip
    return PhysicalPlan(topology.name, containers, tuple(placements), fused)


def upstream_spouts(topology: Topology) -> dict[str, frozenset[str]]:
    """Component -> the spouts whose tuples can reach it (used to scope backpressure)."""
    parents = {c.name: [i.component for i in c.inputs] for c in topology.components}
    memo: dict[str, frozenset[str]] = {}

    def reach(name: str) -> frozenset[str]:
        if name not in memo:
            comp = topology.component(name)
            if comp.kind == "spout":
                memo[name] = frozenset({name})
            else:
                memo[name] = frozenset().union(*(reach(p) for p in parents[name]))
        return memo[name]

    return {c.name: reach(c.name) for c in topology.components}
