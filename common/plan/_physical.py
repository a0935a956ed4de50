"""Task assignment and packing: the physical plan (instances -> containers).

A topology's first plan takes its task ids from the logical plan alone
(components in declaration order, consecutive ids from 1), so every process
derives the same ids without asking. A live edit revises the plan instead
(``revise_plan``): untouched components keep their ids and containers, new
ones get ids above every id used so far, so from then on the ids travel with
the plan (``plan_to_json`` / ``plan_from_json``) rather than being derived.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from functools import cached_property

from ..api import Topology
from ..api._config import DSL_STEPS


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

    def ids(self) -> dict[str, list[int]]:
        """Component -> its sorted task ids (what ``task_ids`` gives for a first plan)."""
        out: dict[str, list[int]] = {}
        for i in sorted(self.instances, key=lambda i: (i.component, i.index)):
            out.setdefault(i.component, []).append(i.task_id)
        return out

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


def plan_to_json(plan: PhysicalPlan) -> str:
    return json.dumps(plan.to_dict())


def plan_from_json(text: str) -> PhysicalPlan:
    d = json.loads(text)
    return PhysicalPlan(
        d["topology"],
        d["containers"],
        tuple(
            InstancePlacement(i["task"], i["component"], i["index"], i["container"])
            for i in d["instances"]
        ),
        tuple((c, tuple(steps)) for c, steps in d.get("fused", {}).items()),
    )


def revise_plan(old: PhysicalPlan, topology: Topology) -> PhysicalPlan:
    """The plan of a revised ``topology``, as close to ``old`` as it can be.

    A component in both keeps its task ids and containers when its parallelism
    is unchanged; anything else (new components, and ones whose parallelism
    changed) gets fresh ids above every id in ``old``, dealt to the least
    loaded containers.
    """
    keep = old.ids()
    fresh = max((i.task_id for i in old.instances), default=0) + 1
    load = {c: 0 for c in range(old.containers)}
    placements: list[InstancePlacement] = []
    new: list[tuple[str, int]] = []
    for comp in topology.components:
        ids = keep.get(comp.name)
        if ids is not None and len(ids) == comp.parallelism:
            for index, task in enumerate(ids):
                container = old.container_of(task)
                placements.append(InstancePlacement(task, comp.name, index, container))
                load[container] += 1
        else:
            new.extend((comp.name, index) for index in range(comp.parallelism))
    for name, index in new:
        container = min(load, key=lambda c: (load[c], c))
        load[container] += 1
        placements.append(InstancePlacement(fresh, name, index, container))
        fresh += 1
    return PhysicalPlan(topology.name, old.containers, tuple(placements), _fused(topology))


def restrict(topology: Topology, plan: PhysicalPlan) -> Topology:
    """``topology`` with only the components ``plan`` runs (a removal needs no new file)."""
    names = {i.component for i in plan.instances}
    return replace(topology, components=tuple(c for c in topology.components if c.name in names))


def _fused(topology: Topology) -> tuple[tuple[str, tuple[str, ...]], ...]:
    return tuple(
        (c.name, tuple(c.config[DSL_STEPS])) for c in topology.components if DSL_STEPS in c.config
    )


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
    return PhysicalPlan(topology.name, containers, tuple(placements), _fused(topology))


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
