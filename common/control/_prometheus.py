"""A topology master's metrics as Prometheus families (see ``common/_prometheus.py``).

The same figures as the JSON API (``_views``), with these labels:

- ``topology`` and ``domain`` on everything: the checkpoint domain the
  topology master runs (``cloud``, or the id of the agent whose edge subgraph
  it is);
- ``component`` for the per-component sums, ``component``, ``task`` and
  ``container`` for a task, ``container`` for a stream manager.

Counters keep the runtime's cumulative values (a restarted task's are folded
in by its stream manager, so they never go back while the container lives);
milliseconds and microseconds become seconds. A metric the tables below do
not know still shows, as ``headwater_task_metric`` or
``headwater_stmgr_metric`` with its name in the ``metric`` label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from .._health import Level
from .._prometheus import Families
from ..wire._states import TopologyState
from . import _views as views
from ._watchdog import OFFLINE_AFTER_S

if TYPE_CHECKING:
    from ._tmaster import TopologyMaster


HOT_KEYS = 5  # the most hot keys shown per task


class Mapped(NamedTuple):
    name: str  # without the prefix (and, for a counter, without ``_total``)
    counter: bool
    scale: float
    doc: str


def _c(name: str, doc: str, scale: float = 1.0) -> Mapped:
    return Mapped(name, True, scale, doc)


def _g(name: str, doc: str, scale: float = 1.0) -> Mapped:
    return Mapped(name, False, scale, doc)


TASK: dict[str, Mapped] = {
    "emitted": _c("emitted", "Tuples emitted."),
    "executed": _c("executed", "Tuples executed."),
    "acked": _c("acked", "Tuples acked (at-least-once)."),
    "failed": _c("failed", "Tuples failed (at-least-once)."),
    "backpressure_ms": _c("backpressure_seconds", "Time the output queue was full.", 1e-3),
    "serialization_errors": _c("serialization_errors", "Tuples that could not be encoded."),
    "dead_letters": _c("dead_letters", "Records sent to the dead-letter stream."),
    "record_retries": _c("record_retries", "Retries of records on which user code raised."),
    "busy_ns": _c("busy_seconds", "Time spent processing (not waiting for input or room).", 1e-9),
    "received": _c("received", "Tuples delivered to the task from its inputs."),
    "restarts": _c("restarts", "Restarts of the task's process."),
    "exceptions": _c("exceptions", "Crashes of the task's process."),
    "pending": _g("pending", "Tuples emitted and not yet acked or failed."),
    "execute_latency_us": _g(
        "execute_latency_seconds", "Mean time to execute a tuple, last second.", 1e-6
    ),
    "in_queue_bytes": _g("in_queue_bytes", "Bytes queued for the task."),
    "in_queue_frames": _g("in_queue_batches", "Batches queued for the task."),
    "out_queue_bytes": _g("out_queue_bytes", "Bytes the task has queued to send."),
    "out_queue_frames": _g("out_queue_batches", "Batches the task has queued to send."),
    "connected": _g("connected", "1 if the task is connected to its stream manager."),
    "pid": _g("pid", "The task's process id."),
}
"""A task's metric (``task:N`` scope) -> ``headwater_task_...``."""

STMGR: dict[str, Mapped] = {
    "bytes_in": _c("bytes_in", "Bytes the stream manager received."),
    "bytes_out": _c("bytes_out", "Bytes the stream manager sent."),
    "batches_in": _c("batches_in", "Batches the stream manager received."),
    "batches_out": _c("batches_out", "Batches the stream manager sent."),
    "buffer_bytes": _g("buffer_bytes", "Bytes buffered in the stream manager."),
    "backpressure_ms": _c("backpressure_seconds", "Time in backpressure.", 1e-3),
    "throttled_ms": _c("throttled_seconds", "Time its spouts were throttled.", 1e-3),
    "pending_trees": _g("pending_trees", "Tuple trees awaiting their acks."),
    "ingress_streams": _g("ingress_streams", "Agent uplink streams received."),
    "ingress_batches": _c("ingress_batches", "Batches received from agent uplinks."),
    "ingress_bytes": _c("ingress_bytes", "Bytes received from agent uplinks."),
    "outbox_bytes": _g("outbox_bytes", "Bytes in the durable outbox, not yet confirmed."),
    "outbox_batches": _g("outbox_batches", "Batches in the durable outbox, not yet confirmed."),
    "outbox_budget_bytes": _g("outbox_budget_bytes", "The outbox's byte budget."),
    "uplink_connected": _g("uplink_connected", "1 if every uplink stream is open."),
    "uplink_streams": _g("uplink_streams", "Uplink streams open."),
    "uplink_sent": _c("uplink_sent_batches", "Batches sent on the uplink."),
    "uplink_confirmed": _c("uplink_confirmed_batches", "Batches the cloud confirmed."),
    "uplink_resends": _c("uplink_resends", "Batches sent again after a reconnection."),
    "uplink_chained": _c("uplink_chained", "Times the cloud held less than it had confirmed."),
    "pid": _g("pid", "The container's process id."),
    "epoch": _g("epoch", "The recovery epoch the container runs."),
}
"""A stream manager's metric (``container:N`` scope) -> ``headwater_stmgr_...``."""


def add_topology(families: Families, tm: TopologyMaster, domain: str) -> None:
    """Add every family of ``tm``, a topology master of ``domain``."""
    name = tm.topology.name
    top = {"topology": name, "domain": domain}
    view = views.metrics(tm)
    status = view["status"]
    for state in TopologyState:
        families.gauge(
            "topology_state",
            "1 for the state the topology is in.",
            {**top, "state": state.value},
            1.0 if tm.state == state else 0.0,
        )
    for level in Level:
        families.gauge(
            "topology_health",
            "1 for the topology's health (crash loops, stuck restores, failing checkpoints).",
            {**top, "health": level.label},
            1.0 if status["health"] == level.label else 0.0,
        )
    families.gauge("topology_revision", "The revision running.", top, tm.current)
    families.gauge("topology_epoch", "The recovery epoch.", top, tm.epoch)
    families.counter(
        "topology_recoveries", "Rollbacks to a checkpoint.", top, tm.recovery.recoveries
    )
    uptime = tm.clock.time() - tm.started
    families.gauge("topology_uptime_seconds", "Since its topology master started.", top, uptime)
    _add_containers(families, tm, top, view["containers"])
    for component, sums in sorted(view["components"].items()):
        for key, value in sums.items():
            if key.startswith("user:"):
                families.counter(
                    "component_user_counter",
                    "A counter of the user's code (Context.incr, heronpy's registered metrics), "
                    "summed over the component's tasks.",
                    {**top, "component": component, "counter": key.partition(":")[2]},
                    value,
                )
                continue
            m = TASK[key]
            families.counter(
                f"component_{m.name}",
                f"{m.doc} Summed over the component's tasks.",
                {**top, "component": component},
                value * m.scale,
            )
    for task, values in sorted(view["tasks"].items(), key=lambda kv: int(kv[0])):
        labels = {
            **top,
            "component": values["component"],
            "task": task,
            "container": str(values["container"]),
        }
        _add_task(families, labels, values)
    add_checkpoints(families, tm, domain)


def _add_task(families: Families, labels: Mapping[str, str], values: Mapping[str, float]) -> None:
    hot = sorted((v, k) for k, v in values.items() if k.startswith("hot_key:"))[-HOT_KEYS:]
    for value, key in hot:
        families.gauge(
            "task_hot_key_share",
            "A hot key's share of the task's sampled input, last interval (fields grouping).",
            {**labels, "key": key.partition(":")[2]},
            value,
        )
    for key, value in values.items():
        if key in ("component", "container") or key.startswith("hot_key:"):
            continue
        m = TASK.get(key)
        if m is not None:
            add = families.counter if m.counter else families.gauge
            add(f"task_{m.name}", m.doc, labels, value * m.scale)
        elif key.startswith("emitted:"):
            families.counter(
                "task_stream_emitted",
                "Tuples emitted, per output stream.",
                {**labels, "stream": key.partition(":")[2]},
                value,
            )
        elif key.startswith("user:"):
            families.counter(
                "task_user_counter",
                "A counter of the user's code (Context.incr).",
                {**labels, "counter": key.partition(":")[2]},
                value,
            )
        else:
            families.gauge(
                "task_metric", "A task metric without a mapping.", {**labels, "metric": key}, value
            )


def _add_containers(
    families: Families,
    tm: TopologyMaster,
    top: Mapping[str, str],
    reported: Mapping[str, Mapping[str, float]],
) -> None:
    now = tm.clock.monotonic()
    for c in sorted(set(tm.containers) | set(range(tm.plan.containers))):
        labels = {**top, "container": str(c)}
        registered = c in tm.containers
        age = now - tm.last_heartbeat.get(c, 0.0)
        families.gauge(
            "container_online",
            "1 if the container registered and beats its heart.",
            labels,
            1.0 if registered and age < OFFLINE_AFTER_S else 0.0,
        )
        if registered:
            families.gauge(
                "container_heartbeat_age_seconds", "Since its last heartbeat.", labels, age
            )
    for name, values in sorted(reported.items()):
        labels = {**top, "container": name}
        for key, value in values.items():
            m = STMGR.get(key)
            if m is not None:
                add = families.counter if m.counter else families.gauge
                add(f"stmgr_{m.name}", m.doc, labels, value * m.scale)
            elif key.startswith("log_committed:"):
                path, _, part = key.partition(":")[2].rpartition("#p")
                families.gauge(
                    "stmgr_log_committed_offset",
                    "Ingest-log offset a complete checkpoint holds.",
                    {**labels, "log": path, "partition": part},
                    value,
                )
            else:
                families.gauge(
                    "stmgr_metric",
                    "A stream manager metric without a mapping.",
                    {**labels, "metric": key},
                    value,
                )


def add_checkpoints(families: Families, tm: TopologyMaster, domain: str) -> None:
    """The checkpoints of an exactly-once ``tm`` (none for another mode)."""
    figures = CheckpointFigures.of(tm)
    if figures is None:
        return
    add_checkpoint_figures(families, tm.topology.name, domain, figures)
    families.gauge(
        "checkpoint_interval_seconds",
        "How often checkpoints are triggered.",
        {"topology": tm.topology.name, "domain": domain},
        tm.checkpoints.interval_s,
    )


class CheckpointFigures(NamedTuple):
    """A domain's checkpoints in figures: what an agent reports of its own to the master."""

    latest: int  # the newest complete checkpoint's id (0: none)
    duration_ms: float  # how long it took
    size_bytes: int  # the snapshots' size
    started: int  # checkpoints started (ids are never reused)
    in_progress: bool

    @classmethod
    def of(cls, tm: TopologyMaster) -> CheckpointFigures | None:
        """``tm``'s figures; None unless it is exactly-once."""
        if not tm.exactly_once:
            return None
        catalogue = tm.catalogue
        latest = catalogue.find(catalogue.latest_complete())
        return cls(
            latest=latest.id if latest is not None else 0,
            duration_ms=(latest.duration_ms or 0.0) if latest is not None else 0.0,
            size_bytes=latest.size_bytes if latest is not None else 0,
            started=catalogue.next_id - 1,
            in_progress=tm.checkpoints.in_flight is not None,
        )

    def metrics(self, topology: str) -> dict[str, float]:
        """As ``NodeStatus.metrics`` entries ``checkpoint:TOPOLOGY:FIELD``."""
        return {f"checkpoint:{topology}:{k}": float(v) for k, v in self._asdict().items()}

    @classmethod
    def parse(cls, metrics: Mapping[str, float]) -> dict[str, CheckpointFigures]:
        """The figures per topology in ``metrics`` (entries as ``metrics`` makes them)."""
        found: dict[str, dict[str, float]] = {}
        for key, value in metrics.items():
            if key.startswith("checkpoint:"):
                topology, _, field = key.partition(":")[2].rpartition(":")
                if field in cls._fields:
                    found.setdefault(topology, {})[field] = value
        return {
            t: cls(
                latest=int(f.get("latest", 0)),
                duration_ms=f.get("duration_ms", 0.0),
                size_bytes=int(f.get("size_bytes", 0)),
                started=int(f.get("started", 0)),
                in_progress=bool(f.get("in_progress", 0)),
            )
            for t, f in found.items()
        }


def add_checkpoint_figures(
    families: Families, topology: str, domain: str, f: CheckpointFigures
) -> None:
    labels = {"topology": topology, "domain": domain}
    families.gauge(
        "checkpoint_latest_id", "The newest complete checkpoint's id (0: none).", labels, f.latest
    )
    families.gauge(
        "checkpoint_duration_seconds",
        "How long the newest complete checkpoint took.",
        labels,
        f.duration_ms / 1000.0,
    )
    families.gauge(
        "checkpoint_size_bytes", "The newest complete checkpoint's snapshots.", labels, f.size_bytes
    )
    families.counter("checkpoints_started", "Checkpoints started.", labels, f.started)
    families.gauge(
        "checkpoint_in_progress", "1 while a checkpoint is in flight.", labels, f.in_progress
    )


def add_topologies(families: Families, tms: Iterable[TopologyMaster], domain: str) -> None:
    for tm in sorted(tms, key=lambda t: t.topology.name):
        add_topology(families, tm, domain)
