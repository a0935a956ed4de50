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

KEEP = 50
"""The newest checkpoints, revisions, exceptions and rollouts a snapshot carries."""
_ERRORS = ("failed", "exceptions", "dead_letters")


def reliability(tm: TopologyMaster) -> str:
    try:
        return RuntimeConfig.from_mapping(tm.topology.config).reliability.value
    except ValueError:
        return "unknown"


def topology_row(tm: TopologyMaster) -> dict[str, Any]:
    """One line of the topologies table: the summary without its lists, plus totals."""
    s = tm.summary()
    totals: dict[str, float] = {}
    for values in tm.metrics_view()["components"].values():
        for k in ("emitted", "executed", *_ERRORS):
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
        "errors": sum(totals.get(k, 0.0) for k in _ERRORS),
    }


def of_topology_master(tm: TopologyMaster, topology: str | None = None) -> dict[str, Any]:
    """The snapshot of a lone topology master (``headwater run``): no nodes, no models."""
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
