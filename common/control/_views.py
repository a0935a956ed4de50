"""What a topology master (tmaster) shows: the JSON views behind its HTTP API.

Each function reads one topology master and returns plain data for
``cloud/tmaster/_http.py`` (and so for ``headwater status``, the master
daemon's API and an agent's status page). Reading only: nothing here changes
the topology master, which they read through ``ViewedMaster``, a Protocol of
what they need (``TopologyMaster`` satisfies it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from ._watchdog import OFFLINE_AFTER_S, Watchdog, WatchedMaster

if TYPE_CHECKING:
    from .._clock import Clock
    from ..api import ComponentSpec
    from ._edits import EditCoordinator
    from ._revisions import RevisionLog

# the task metrics summed per component in ``metrics``
SUMMED = (
    "emitted",
    "executed",
    "acked",
    "failed",
    "backpressure_ms",
    "restarts",
    "exceptions",
    "serialization_errors",
    "dead_letters",
    "record_retries",
    "busy_ns",
    "received",
)


class ViewedMaster(WatchedMaster, Protocol):
    """What the views read of a topology master: what its watchdog reads, and more."""

    @property
    def clock(self) -> Clock: ...
    @property
    def current(self) -> int: ...
    @property
    def plan_version(self) -> int: ...
    @property
    def epoch(self) -> int: ...
    @property
    def started(self) -> float: ...
    @property
    def watchdog(self) -> Watchdog: ...
    @property
    def edits(self) -> EditCoordinator: ...
    @property
    def revlog(self) -> RevisionLog: ...


def summary(tm: ViewedMaster) -> dict[str, Any]:
    """State, revision, epoch, containers (online or not) and components."""
    now = tm.clock.monotonic()
    return {
        "name": tm.topology.name,
        "state": tm.state,
        "revision": tm.current,
        "plan_version": tm.plan_version,
        "epoch": tm.epoch,
        "recoveries": tm.recovery.recoveries,
        "uptime_s": round(tm.clock.time() - tm.started, 1),
        "status": tm.watchdog.view(),
        "containers": [
            {
                "container": c,
                "stmgr": info.stmgr_address,
                "pid": info.pid,
                "online": now - tm.last_heartbeat.get(c, 0) < OFFLINE_AFTER_S,
                "heartbeat_s_ago": round(now - tm.last_heartbeat.get(c, 0), 1),
            }
            for c, info in sorted(tm.containers.items())
        ],
        "components": [component(c) for c in tm.topology.components],
    }


def component(c: ComponentSpec) -> dict[str, Any]:
    """One component as the summary lists it: kind, parallelism, inputs and outputs."""
    return {
        "name": c.name,
        "kind": c.kind,
        "parallelism": c.parallelism,
        "inputs": [
            {"component": i.component, "stream": i.stream, "grouping": str(i.grouping)}
            for i in c.inputs
        ],
        "outputs": [{"stream": s.name, "fields": list(s.fields)} for s in c.outputs],
    }


def revisions(tm: ViewedMaster) -> dict[str, Any]:
    """The revision running, the one being applied, and the history."""
    edit = tm.edits.edit
    return {
        "current": tm.current,
        "applying": edit.revision if edit is not None else None,
        "revisions": [r.view() for r in tm.revlog.records],
    }


def checkpoints(tm: ViewedMaster) -> dict[str, Any]:
    """The checkpoint catalogue (exactly-once topologies)."""
    return {
        "exactly_once": tm.exactly_once,
        "interval_s": tm.checkpoints.interval_s,
        "epoch": tm.epoch,
        "latest_complete": tm.catalogue.latest_complete(),
        "checkpoints": [c.to_dict() for c in tm.catalogue.checkpoints],
    }


def metrics(tm: ViewedMaster) -> dict[str, Any]:
    """The heartbeats' metrics per task, summed per component (with the user counters,
    ``user:<name>``, which heronpy's registered metrics are too), and per container."""
    tasks: dict[str, dict[str, Any]] = {}
    components: dict[str, dict[str, float]] = {}
    for inst in tm.plan.instances:
        m = dict(tm.metrics.get(f"task:{inst.task_id}", {}))
        tasks[str(inst.task_id)] = {"component": inst.component, "container": inst.container, **m}
        agg = components.setdefault(inst.component, {})
        for k in SUMMED:
            agg[k] = agg.get(k, 0.0) + m.get(k, 0.0)
        for k, v in m.items():
            if k.startswith("user:"):
                agg[k] = agg.get(k, 0.0) + v
    containers = {
        scope.split(":", 1)[1]: values
        for scope, values in tm.metrics.items()
        if scope.startswith("container:")
    }
    return {
        "topology": tm.topology.name,
        "status": tm.watchdog.view(),
        "components": components,
        "tasks": tasks,
        "containers": containers,
    }
