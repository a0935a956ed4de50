"""What the console shows of one topology master: its row and its detail, as plain data.

Built from the producers the REST API already serves (``TopologyMaster``'s
summary, metrics, plan, checkpoints, revisions and exceptions), so that the
page and the API never disagree. Counters stay cumulative: the page turns
snapshots into rates. The master (``cloud/console/_snapshot.py``) adds its nodes,
agents and models; an agent (``edge/_console.py``) its own figures.

Reading only: nothing here changes a topology master. Runs on the event loop (the
structures it reads are the loop's), and costs one pass over the plan.
"""

from __future__ import annotations

import time
from typing import Any

from headwater.common.api import RuntimeConfig
from headwater.common.api._topology import Topology
from headwater.common.control import TopologyMaster

from ._history import History
from ._history_query import rates_view

KEEP = 50
"""The newest checkpoints, revisions, exceptions and rollouts a snapshot carries."""
ERROR_KINDS = ("exceptions", "dead_letters", "failed")
"""What the DAG flags on a component: crashes of its tasks, records dead-lettered, failed
tuple trees (at least once; cloud only, agents do not count them)."""


def reliability(tm: TopologyMaster) -> str:
    try:
        return RuntimeConfig.from_mapping(tm.topology.config).reliability.value
    except ValueError:
        return "unknown"


def errors(
    tm: TopologyMaster,
    whole: Topology | None = None,
    agents: dict[str, Any] | None = None,
    metrics: dict[str, Any] | None = None,
    all_edge: bool = False,
) -> dict[str, float]:
    """The topology's errors as its DAG shows them, summed: ``errors`` (the total) and each
    of ``ERROR_KINDS``. A cloud component's from its topology master's metrics; an edge
    component's (``whole``: the whole topology, edge included) from each agent's counts
    (``agents``: ``cloud/console``'s per-agent figures); ``all_edge``: every component
    drawn as an edge one (an agent's own page). The console's ``dag.js`` draws the same
    sums on each box, so the topologies table, the REST summary and the DAG agree."""
    components = (metrics or tm.metrics_view())["components"]
    out = dict.fromkeys(ERROR_KINDS, 0.0)
    for c in (whole or tm.topology).components:
        if all_edge or c.placement.is_edge:
            for agent in (agents or {}).values():
                counts = agent["components"].get(c.name, {})
                out["exceptions"] += counts.get("exceptions", 0.0)
                out["dead_letters"] += counts.get("dead_letters", 0.0)
        else:
            values = components.get(c.name, {})
            for k in ERROR_KINDS:
                out[k] += values.get(k, 0.0)
    return {"errors": sum(out.values()), **out}


def topology_row(
    tm: TopologyMaster,
    whole: Topology | None = None,
    agents: dict[str, Any] | None = None,
    all_edge: bool = False,
) -> dict[str, Any]:
    """One line of the topologies table: the summary without its lists, plus totals
    (``errors``: what the DAG flags, edge included given ``whole`` and ``agents``)."""
    s = tm.summary()
    metrics = tm.metrics_view()
    totals: dict[str, float] = {}
    for values in metrics["components"].values():
        for k in ("emitted", "executed"):
            totals[k] = totals.get(k, 0.0) + values.get(k, 0.0)
    return {
        "name": s["name"],
        "state": s["state"],
        "revision": s["revision"],
        "uptime_s": s["uptime_s"],
        "status": s["status"],
        "reliability": reliability(tm),
        "containers": len(s["containers"]),
        "executed": totals.get("executed", 0.0),
        "emitted": totals.get("emitted", 0.0),
        **errors(tm, whole, agents, metrics, all_edge),
    }


def of_topology_master(
    tm: TopologyMaster, topology: str | None = None, history: History | None = None
) -> dict[str, Any]:
    """The snapshot of a lone topology master (``headwater run``): no nodes, no models;
    ``history``: its history, whose rates the page shows (``rates``)."""
    out: dict[str, Any] = {
        "time": time.time(),
        "topologies": [topology_row(tm)],
        "nodes": [],
        "models": [],
    }
    if topology is not None:
        out["topology"] = (
            topology_detail(tm, tm.topology, {}, {}) if topology == tm.topology.name else None
        )
    if history is not None:
        out["rates"] = rates_view(history, [tm.topology.name], topology)
    return out


def topology_detail(
    tm: TopologyMaster,
    whole: Topology,
    agents: dict[str, Any],
    agent_revisions: dict[str, int],
) -> dict[str, Any]:
    """One topology: its graph, metrics per component and task, edge figures per agent,
    checkpoints, revisions and exceptions."""
    metrics = tm.metrics_view()
    gauges: dict[str, dict[str, float]] = {}
    for task in metrics["tasks"].values():
        g = gauges.setdefault(task["component"], {"pending": 0.0, "latency_us": 0.0, "tasks": 0})
        g["pending"] += task.get("pending", 0.0)
        g["latency_us"] = max(g["latency_us"], task.get("execute_latency_us", 0.0))
        g["tasks"] += 1
    components = [
        {
            "name": c.name,
            "kind": c.kind,
            "parallelism": c.parallelism,
            "side": "edge" if c.placement.is_edge else "cloud",
            "selector": dict(c.placement.selector),
            "inputs": sorted({i.component for i in c.inputs}),
        }
        for c in whole.components
    ]
    revisions = tm.revisions_view()
    checkpoints = tm.checkpoints_view()
    return {
        "name": tm.topology.name,
        "state": tm.state,
        "reliability": reliability(tm),
        "revision": tm.current,
        "components": components,
        "metrics": {
            c: {**values, **gauges.get(c, {})} for c, values in metrics["components"].items()
        },
        "tasks": metrics["tasks"],
        "status": metrics["status"],
        "containers": tm.summary()["containers"],
        "agents": agents,
        "checkpoints": {**checkpoints, "checkpoints": checkpoints["checkpoints"][-KEEP:]},
        "revisions": {
            **revisions,
            "revisions": revisions["revisions"][-KEEP:],
            "agents": agent_revisions,
        },
        "exceptions": list(tm.exceptions)[-KEEP:],
    }
