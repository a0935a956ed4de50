"""What an instance routes with: a topology revision's tasks, as a ``Revision``.

An instance starts with its topology's (or plan's) revision; a live edit
stages another (``Prepare``, ``load_revision``) that the input gate switches
to at its switch checkpoint (``_input_gate.InputGate``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..api import Topology
from ..plan import load_topology, plan_from_json, restrict
from ..plan._routing import Router
from ..wire._control import Prepare


@dataclass(frozen=True)
class Revision:
    """A revision as one component's task sees it."""

    topology: Topology
    ids: dict[str, list[int]]
    router: Router
    sources: frozenset[int]  # the upstream tasks whose markers a checkpoint waits for
    downstream: list[int]  # the tasks that read this component's streams


def revision(
    topology: Topology, component: str, ids: dict[str, list[int]], router: Router
) -> Revision:
    return Revision(
        topology,
        ids,
        router,
        sources_of(topology, component, ids),
        downstream_of(topology, component, ids),
    )


def load_revision(msg: Prepare, component: str, context: object, task: int) -> Revision:
    """The revision a ``Prepare`` stages (its plan and topology files loaded)."""
    with open(msg.plan) as f:
        plan = plan_from_json(f.read())
    topology = restrict(load_topology(msg.file, msg.topology, msg.domain, msg.labels), plan)
    ids = plan.ids()
    router = Router(topology, component, context, task * 7919 + os.getpid(), ids)
    return revision(topology, component, ids, router)


def sources_of(topology: Topology, component: str, ids: dict[str, list[int]]) -> frozenset[int]:
    """The tasks ``component`` reads (it aligns on their markers)."""
    inputs = topology.component(component).inputs
    return frozenset(t for inp in inputs for t in ids.get(inp.component, []))


def downstream_of(topology: Topology, component: str, ids: dict[str, list[int]]) -> list[int]:
    """The tasks that read ``component``'s streams (each gets its checkpoint markers)."""
    return sorted(
        {
            t
            for c in topology.components
            for inp in c.inputs
            if inp.component == component
            for t in ids.get(c.name, ())
        }
    )
