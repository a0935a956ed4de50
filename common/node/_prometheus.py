"""A node's status as Prometheus families (see ``common/_prometheus.py``).

A ``NodeStatus`` is what a worker or an agent says of itself (the agent's own
status page shows it, and the master keeps the last one of every node). Every
family has the ``node`` label; per-topology figures add ``topology``, an edge
component's ``component``. The agent's ``metrics`` entries are mapped here;
``edge/_agent.py`` and ``edge/_component_status.py`` say what they mean. An
entry the tables do not know still shows, as ``headwater_node_metric`` with
its name in the ``metric`` label.
"""

from __future__ import annotations

from collections.abc import Mapping

from .._health import Level
from .._prometheus import Families
from ..control._prometheus import STMGR, CheckpointFigures, Mapped, add_checkpoint_figures
from ..wire.proto import runtime_pb2 as pb

NODE: dict[str, Mapped] = {
    "uptime_s": Mapped("uptime_seconds", False, 1.0, "Since the node's process started."),
    "uplink_connected": Mapped("uplinks_connected", False, 1.0, "1 if every uplink is open."),
    "outbox_budget_bytes": Mapped("outbox_budget_bytes", False, 1.0, "The outbox's budget."),
    "mqtt_connected": Mapped("mqtt_connected", False, 1.0, "1 if connected to the broker."),
    "mqtt_received": Mapped("mqtt_received", True, 1.0, "MQTT messages received."),
    "mqtt_appended": Mapped("mqtt_appended", True, 1.0, "Messages written to the ingest log."),
    "mqtt_acked": Mapped("mqtt_acked", True, 1.0, "Messages acknowledged to the broker."),
    "mqtt_dropped_qos0": Mapped(
        "mqtt_dropped_qos0", True, 1.0, "QoS 0 messages dropped while ingestion was paused."
    ),
    "mqtt_queued": Mapped("mqtt_queued", False, 1.0, "Messages waiting to be written."),
    "mqtt_queued_bytes": Mapped("mqtt_queued_bytes", False, 1.0, "Bytes waiting to be written."),
    "mqtt_paused": Mapped("mqtt_paused", False, 1.0, "1 while a full outbox pauses ingestion."),
    "mqtt_paused_s": Mapped("mqtt_paused_seconds", True, 1.0, "Time ingestion was paused."),
    "ingest_write_errors": Mapped("ingest_write_errors", True, 1.0, "Ingest-log writes failed."),
    "ingest_trimmed": Mapped(
        "ingest_trimmed", True, 1.0, "Ingest-log records dropped by retention."
    ),
}
"""A node's own ``NodeStatus.metrics`` entry -> ``headwater_node_...``."""

_COMPONENT = {
    "executed": "Tuples executed, summed over the component's tasks on this agent.",
    "exceptions": "Crashes of the component's tasks on this agent.",
    "dead_letters": "Records the component dead-lettered on this agent.",
}


def add_node_status(
    families: Families,
    node: str,
    status: pb.NodeStatus | None,
    *,
    online: bool = True,
    checkpoints: bool = True,
) -> None:
    """Add the families of ``node``'s ``status`` (None: it never reported one).

    ``online=False`` shows its uplinks down, whatever it last said; ``checkpoints``:
    whether to add the checkpoints of its edge domains it reports (the agent's own
    page has them from its topology masters instead)."""
    labels = {"node": node}
    health = (status.health or "ok") if status is not None else ""
    for level in Level:
        families.gauge(
            "node_health",
            "1 for the health the node reports (ok, degraded, failed).",
            {**labels, "health": level.label},
            1.0 if health == level.label else 0.0,
        )
    if status is None:
        return
    backlog = "the cloud has not confirmed (the durable outbox)."
    families.gauge("node_backlog_bytes", f"Bytes {backlog}", labels, status.backlog_bytes)
    families.gauge("node_backlog_batches", f"Batches {backlog}", labels, status.backlog_batches)
    families.gauge("node_containers", "Containers running.", labels, len(status.containers))
    for u in sorted(status.uplinks, key=lambda u: u.topology):
        per = {**labels, "topology": u.topology}
        families.gauge(
            "node_uplink_connected",
            "1 if the uplink's streams are all open.",
            per,
            1.0 if online and u.connected else 0.0,
        )
        for key, value in sorted(u.metrics.items()):
            m = STMGR.get(key)
            if m is not None and key not in NODE:  # the budget and state are the node's
                add = families.counter if m.counter else families.gauge
                add(f"node_{m.name}", m.doc, per, value * m.scale)
    _add_metrics(families, labels, status.metrics, checkpoints)


def _add_metrics(
    families: Families, labels: Mapping[str, str], metrics: Mapping[str, float], checkpoints: bool
) -> None:
    figures = CheckpointFigures.parse(metrics)
    if checkpoints:
        for topology, f in sorted(figures.items()):
            add_checkpoint_figures(families, topology, labels["node"], f)
    for key, value in sorted(metrics.items()):
        kind, _, rest = key.partition(":")
        m = NODE.get(key)
        if m is not None:
            add = families.counter if m.counter else families.gauge
            add(f"node_{m.name}", m.doc, labels, value * m.scale)
        elif kind in ("checkpoint", "edge_task", "edge_tasks", "ingest_end"):
            continue  # the checkpoints' own families; the health manager's raw counters
        elif kind == "ingest_backlog" and rest:
            families.gauge(
                "node_ingest_backlog_records",
                "Records in the ingest log past what the edge subgraph last checkpointed.",
                {**labels, "topology": rest},
                value,
            )
        elif kind == "revision" and rest:
            families.gauge(
                "node_revision",
                "The revision of the topology's edge subgraph the node runs.",
                {**labels, "topology": rest},
                value,
            )
        elif kind == "revision_failed" and rest:
            families.gauge(
                "node_revision_failed",
                "The newest revision refused or rolled back here (0: none).",
                {**labels, "topology": rest},
                value,
            )
        elif kind == "model" and "/" in rest:
            topology, _, component = rest.partition("/")
            families.gauge(
                "node_model_version",
                "The model version the component runs here (0: its own logic).",
                {**labels, "topology": topology, "component": component},
                value,
            )
        elif kind == "component" and "/" in rest and ":" in rest:
            where, _, figure = rest.partition(":")
            topology, _, component = where.partition("/")
            per = {**labels, "topology": topology, "component": component}
            if figure in _COMPONENT:
                families.counter(f"node_component_{figure}", _COMPONENT[figure], per, value)
            elif figure.startswith("user:"):
                families.counter(
                    "node_component_user_counter",
                    "A counter of the user's code, summed over the component's tasks here.",
                    {**per, "counter": figure.partition(":")[2]},
                    value,
                )
        else:
            families.gauge(
                "node_metric", "A node metric without a mapping.", {**labels, "metric": key}, value
            )
