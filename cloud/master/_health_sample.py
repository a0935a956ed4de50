"""A ``Sample`` for the health manager: a topology master's metrics view and the running plan.

The tasks' counters come from ``common/control/_views.metrics`` ("tasks": {id: {"component",
"executed", "emitted", "received", "busy_ns", "backpressure_ms", "in_queue_frames",
"uptime_ns", "hot_key:<key>", ...}}); the components from the running revision's whole topology (its
parallelism, its inputs with their grouping kinds, spouts as sources, and those placed on
the agents marked ``edge``). A task that has not reported at all yet (no ``executed``: one a
rescale just started) is left out: read as zeros, it showed as an idle sibling beside the
others (a false skew); a counter a reporting task has not sent reads 0. The cloud's tasks
named after an edge component are the receivers of what it sends up (``ReplayFilter``), not
the component: they are left out (read as its idle tasks, they halved its busy share).

The edge tasks run on the agents, under the agents' own topology masters: the master's view
has none of them. Each agent running the topology's edge subgraph reports its tasks' counters
in its status (``edge_task:T/C/ID:KEY``, ``edge/_component_status.py``), with how many tasks
the subgraph has (``edge_tasks:T``), its footprint limit (``edge_max_tasks``) and its ingest
backlog and its ingest log's end (``ingest_backlog:T``, ``ingest_end:T``,
``edge/_edge_status.py``); ``agents`` hands them in. An edge
task's id in the sample is ``edge_task_id(agent, id)``, far above the cloud's ids (which count
from 0 in one plan), so that the same task of the same agent is compared across samples. An
edge task is read as of the time the master heard its agent's status (``at``: an agent reports
every 2 s, so two samples may read the same report; rates are over the interval between its
own readings, ``common/health/_rates.py``). An
edge component's ``copies`` are the agents reporting its tasks, its ``cap`` the least room one
of them has for it (``edge_max_tasks`` less the subgraph's other tasks), the sample's
``ingest_backlog`` the agents' sum and ``uplinks_up`` whether every one's uplink is connected.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from headwater.common.api import Topology
from headwater.common.health._model import ComponentInfo, Sample, TaskSample

_HOT = "hot_key:"
EDGE_TASK_BASE = 1_000_000
TASK_KEYS = ("executed", "emitted", "received", "busy_ns", "backpressure_ms", "in_queue_frames")


@dataclass(frozen=True)
class AgentReport:
    """What an agent running a topology's edge subgraph last reported of it."""

    metrics: Mapping[str, float]  # its status's metrics
    uplink_up: bool  # its uplink of that topology is connected
    at: float  # when the master heard that status (monotonic s): its counters' reading time


def edge_task_id(agent: str, task: int) -> int:
    """The id of the agent's edge task ``task`` in a sample (``EDGE_TASK_BASE`` times one of
    1,000 buckets of the agent's name, plus the task's own id)."""
    return EDGE_TASK_BASE * (1 + zlib.crc32(agent.encode()) % 1000) + task


def edge_tasks(topology: str, agents: Mapping[str, AgentReport]) -> dict[int, TaskSample]:
    """The edge tasks of ``topology`` its agents report, by their ids in a sample."""
    prefix = f"edge_task:{topology}/"
    values: dict[tuple[str, str, int], dict[str, float]] = {}
    at = {agent: report.at for agent, report in agents.items()}
    for agent, report in sorted(agents.items()):
        for key, value in report.metrics.items():
            if not key.startswith(prefix):
                continue
            where, _, name = key[len(prefix) :].rpartition(":")
            component, _, task = where.rpartition("/")
            if component and task.isdigit() and name in TASK_KEYS:
                values.setdefault((agent, component, int(task)), {})[name] = float(value)
    return {
        (i := edge_task_id(agent, task)): TaskSample(
            task=i,
            component=component,
            executed=v["executed"],
            emitted=v.get("emitted", 0.0),
            received=v.get("received", 0.0),
            busy_ns=v.get("busy_ns", 0.0),
            backpressure_ms=v.get("backpressure_ms", 0.0),
            in_queue_frames=v.get("in_queue_frames", 0.0),
            at=at[agent],
        )
        for (agent, component, task), v in values.items()
        if "executed" in v
    }


def _edge_components(
    topology: str, components: dict[str, ComponentInfo], agents: Mapping[str, AgentReport]
) -> dict[str, ComponentInfo]:
    """``components`` with each edge one's ``copies`` and ``cap`` from its agents' reports."""
    out = dict(components)
    for name, info in components.items():
        if not info.edge:
            continue
        mine = f"edge_task:{topology}/{name}/"
        running = [r for r in agents.values() if any(k.startswith(mine) for k in r.metrics)]
        rooms = [
            int(
                r.metrics["edge_max_tasks"]
                - (r.metrics[f"edge_tasks:{topology}"] - info.parallelism)
            )
            for r in running
            if "edge_max_tasks" in r.metrics and f"edge_tasks:{topology}" in r.metrics
        ]
        cap = max(min(rooms), 1) if rooms else None
        out[name] = replace(info, copies=max(len(running), 1), cap=cap)
    return out


def components_of(topology: Topology) -> dict[str, ComponentInfo]:
    """Each component of ``topology`` (the whole one: edge and cloud) as the manager reads it."""
    return {
        c.name: ComponentInfo(
            name=c.name,
            parallelism=c.parallelism,
            inputs=tuple((i.component, i.grouping.kind) for i in c.inputs),
            source=c.kind == "spout",
            edge=c.placement.is_edge,
        )
        for c in topology.components
    }


def _number(values: Mapping[str, Any], key: str) -> float:
    value = values.get(key, 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def task_samples(view: Mapping[str, Any]) -> dict[int, TaskSample]:
    """The tasks of a metrics view, by task id (entries that are not a task's are skipped)."""
    out: dict[int, TaskSample] = {}
    for key, values in (view.get("tasks") or {}).items():
        if not str(key).isdigit() or not isinstance(values, Mapping) or "executed" not in values:
            continue  # not a task's, or a task that has not reported yet (a new one starting)
        hot = sorted(
            ((k[len(_HOT) :], _number(values, k)) for k in values if k.startswith(_HOT)),
            key=lambda kv: (-kv[1], kv[0]),
        )
        out[int(key)] = TaskSample(
            task=int(key),
            component=str(values.get("component", "")),
            executed=_number(values, "executed"),
            emitted=_number(values, "emitted"),
            received=_number(values, "received"),
            busy_ns=_number(values, "busy_ns"),
            backpressure_ms=_number(values, "backpressure_ms"),
            in_queue_frames=_number(values, "in_queue_frames"),
            uptime_ns=_number(values, "uptime_ns"),
            hot_keys=tuple(hot),
        )
    return out


def build_sample(
    topology: str,
    revision: int,
    at: float,
    view: Mapping[str, Any],
    whole: Topology,
    agents: Mapping[str, AgentReport] | None = None,
) -> Sample:
    """One reading of ``topology`` at revision ``revision`` (``at``: monotonic seconds);
    ``agents``: what those running its edge subgraph report, by agent id."""
    agents = agents or {}
    backlogs = [
        (r.metrics[f"ingest_backlog:{topology}"], r.at, r.metrics.get(f"ingest_end:{topology}"))
        for r in agents.values()
        if f"ingest_backlog:{topology}" in r.metrics
    ]
    ends = [e for _, _, e in backlogs if e is not None]
    components = _edge_components(topology, components_of(whole), agents)
    cloud = {  # an edge component's task in the cloud is its receiver, not the component
        t: v
        for t, v in task_samples(view).items()
        if v.component not in components or not components[v.component].edge
    }
    return Sample(
        topology=topology,
        revision=revision,
        at=at,
        components=components,
        tasks={**cloud, **edge_tasks(topology, agents)},
        ingest_backlog=float(sum(b for b, _, _ in backlogs)) if backlogs else None,
        uplinks_up=all(r.uplink_up for r in agents.values()),
        backlog_at=max(at for _, at, _ in backlogs) if backlogs else None,
        ingest_end=float(sum(ends)) if ends and len(ends) == len(backlogs) else None,
    )
