"""What the console shows, as one JSON-ready snapshot of the master, built once a second.

Each topology's row and detail as ``common/console/_snapshot.py`` makes them
(from the producers the REST API serves), with what only the master knows:
the whole topology (edge components included), its agents' figures, the
nodes, the model registry and rollouts, and the Spark jobs (as ``GET
/api/v1/spark/jobs`` shows them).

Reading only: nothing here changes the master. Runs on the event loop (the
structures it reads are the loop's), and costs one pass over the plan.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from headwater.common.api._topology import Topology
from headwater.common.console import KEEP, errors, topology_detail, topology_row
from headwater.common.console._history import History
from headwater.common.console._history_query import rates_view
from headwater.common.control import TopologyMaster
from headwater.common.control._prometheus import CheckpointFigures
from headwater.common.control._revisions import without

if TYPE_CHECKING:
    from headwater.cloud.master._master import Master

_EDGE_SUMMED = ("emitted", "executed", "exceptions", "dead_letters")


def snapshot(
    master: Master, topology: str | None = None, history: History | None = None
) -> dict[str, Any]:
    """The whole console's data; ``topology``: also the detail of that one (None if unknown);
    ``history``: the topologies' history, whose rates the page shows (``rates``)."""
    out: dict[str, Any] = {
        "time": time.time(),
        "topologies": [
            topology_row(tm, whole_topology(master, tm), agents_of(master, tm))
            for _, tm in sorted(master.tms.items())
        ],
        "nodes": [r.view() for _, r in sorted(master.nodes.records.items())],
        "models": _models(master),
        "spark_jobs": master.spark_jobs.views(),
    }
    if topology is not None:
        tm = master.tms.get(topology)
        out["topology"] = None if tm is None else detail(master, tm)
    if history is not None:
        out["rates"] = rates_view(history, sorted(master.tms), topology)
    return out


def whole_topology(master: Master, tm: TopologyMaster) -> Topology:
    """The current revision's whole topology, edge components included (the topology master
    holds the cloud part only); the cloud part when its skeleton is not at hand."""
    rec = tm.revlog.find(tm.current)
    whole = None if rec is None else master.described(rec.package, rec.entry)
    if rec is None or whole is None:
        return tm.topology
    return without(whole, rec.exclude)


def detail(master: Master, tm: TopologyMaster) -> dict[str, Any]:
    """One topology of the master: its detail with its agents' edge figures."""
    return topology_detail(
        tm,
        whole_topology(master, tm),
        agents_of(master, tm),
        master.agent_revisions(tm.topology.name),
    )


def agents_of(master: Master, tm: TopologyMaster) -> dict[str, Any]:
    """The figures of the agents running ``tm``'s edge subgraph (see ``_agents``)."""
    name = tm.topology.name
    dep = master.deployments.get(name)
    return _agents(master, name, dep.agents if dep is not None else [])


def topology_errors(master: Master, tm: TopologyMaster) -> dict[str, float]:
    """``tm``'s errors as its DAG shows them, its agents' edge components included."""
    return errors(tm, whole_topology(master, tm), agents_of(master, tm))


def _agents(master: Master, name: str, agents: list[str]) -> dict[str, Any]:
    """Agent -> its edge subgraph of ``name``: online, uplink, backlog, per-component counts
    (``_EDGE_SUMMED``, and ``backpressure_ms`` summed over its tasks with ``tasks``, how many
    reported)."""
    out: dict[str, Any] = {}
    prefix = f"component:{name}/"
    task_prefix = f"edge_task:{name}/"
    for agent in sorted(agents):
        record = master.nodes.records.get(agent)
        if record is None:
            continue
        view = record.view()
        counts: dict[str, dict[str, float]] = {}
        for key, value in view["metrics"].items():
            if key.startswith(prefix):
                component, _, metric = key[len(prefix) :].rpartition(":")
                if metric in _EDGE_SUMMED:
                    counts.setdefault(component, {})[metric] = value
            elif key.startswith(task_prefix) and key.endswith(":backpressure_ms"):
                # each edge task's own (for the health manager): summed, with the tasks
                # counted, so that the page draws an edge box's backpressure as a cloud one's
                component = key[len(task_prefix) :].rpartition(":")[0].rpartition("/")[0]
                c = counts.setdefault(component, {})
                c["backpressure_ms"] = c.get("backpressure_ms", 0.0) + value
                c["tasks"] = c.get("tasks", 0.0) + 1
        out[agent] = {
            "online": view["online"],
            "health": view["health"],
            "reasons": view["reasons"],
            "backlog_bytes": view["backlog_bytes"],
            "uplink": view["uplinks"].get(name, {}),
            "revision": int(view["metrics"].get(f"revision:{name}", 0)),
            # when its newest report came (epoch s): the page's rates of its counters are
            # over the time between its reports, not between snapshots
            "reported_at": round(time.time() - (time.monotonic() - record.last_seen), 3),
            "components": counts,
            # its edge domain's newest checkpoint, as it reports it (exactly-once only)
            "checkpoint": _checkpoint(view["metrics"], name),
        }
    return out


def _checkpoint(metrics: dict[str, float], name: str) -> dict[str, Any] | None:
    figures = CheckpointFigures.parse(metrics).get(name)
    return None if figures is None else figures._asdict()


def _models(master: Master) -> list[dict[str, Any]]:
    out = []
    for entry in master.models.names():
        versions = master.models.versions(entry["name"])
        out.append(
            {
                **entry,
                "versions": versions[-KEEP:],
                "rollouts": master.rollouts.of(entry["name"])[-KEEP:],
            }
        )
    return out
