"""The figures an agent's ``NodeStatus`` carries of its edge subgraphs and its ingestion.

Read from what each edge domain's topology master last heard of its one edge
container (``container:0``): the outboxes' backlog (with what ``_resume.py``
read on disk for a subgraph not reporting yet), whether any outbox is over the
budget (MQTT acknowledgement pauses), its uplinks, each domain's revision,
components and checkpoints, the MQTT ingestion's counters, and each edge
subgraph's ingest backlog (``ingest_backlog:T``: the records in the ingest log
past what its last complete checkpoint committed, summed over the partitions it
reads, and ``ingest_end:T``, those partitions' end offsets summed, whose growth is
the ingest rate; for the master's health manager). Each function takes the few things it
reads, not the agent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from headwater.common._health import DEGRADED, FAILED, Health
from headwater.common.control._prometheus import CheckpointFigures
from headwater.common.wire.proto import runtime_pb2 as pb

from ._component_status import component_metrics

if TYPE_CHECKING:
    from headwater.common.control import TopologyMaster

    from ._ingest import IngestStats


def outbox_metric(tms: Mapping[str, TopologyMaster], name: str) -> float:
    """``name`` summed over every edge subgraph's outbox report."""
    return sum(tm.metrics.get("container:0", {}).get(name, 0.0) for tm in tms.values())


def backlog(
    tms: Mapping[str, TopologyMaster], disk_backlog: Mapping[str, tuple[int, int]]
) -> tuple[int, int]:
    """Bytes and batches not yet confirmed by the cloud, in every edge subgraph's outbox."""
    nbytes = batches = 0
    for name in set(tms) | set(disk_backlog):
        tm = tms.get(name)
        reported = tm.metrics.get("container:0", {}) if tm is not None else {}
        if "outbox_batches" in reported:
            nbytes += int(reported.get("outbox_bytes", 0.0))
            batches += int(reported["outbox_batches"])
        elif name in disk_backlog:
            nbytes, batches = nbytes + disk_backlog[name][0], batches + disk_backlog[name][1]
    return nbytes, batches


def outbox_full(tms: Mapping[str, TopologyMaster], budget: int) -> bool:
    """MQTT acknowledgement stops while any edge subgraph's outbox is over ``budget``."""
    return any(
        tm.metrics.get("container:0", {}).get("outbox_bytes", 0.0) >= budget
        for tm in list(tms.values())
    )


def add_uplinks(s: pb.NodeStatus, tms: Mapping[str, TopologyMaster], health: Health) -> None:
    """Its uplinks go to the workers: say how, one ``UplinkState`` per edge subgraph (and in
    the health, where the cloud held less than it had confirmed)."""
    s.metrics["uplink_connected"] = outbox_metric(tms, "uplink_connected")
    if outbox_metric(tms, "uplink_chained"):
        health.set(
            "uplink",
            DEGRADED,
            "the cloud held less than it had confirmed: an id changed, or the cloud lost "
            "batches (the edge container's log says which)",
        )
    for name, tm in list(tms.items()):
        reported = tm.metrics.get("container:0", {})
        if "uplink_connected" in reported:
            s.uplinks.append(
                pb.UplinkState(
                    topology=name,
                    connected=reported["uplink_connected"] == 1.0,
                    metrics={
                        k: v for k, v in reported.items() if k.startswith(("uplink_", "outbox_"))
                    },
                )
            )


def add_domains(
    s: pb.NodeStatus,
    tms: Mapping[str, TopologyMaster],
    running: Callable[[str, TopologyMaster], int],
    labels: Mapping[str, str],
    node_id: str,
    health: Health,
) -> None:
    """Each edge domain's revision (``running``), components and checkpoints; a domain that
    cannot complete checkpoints (a full disk) is a reason in ``health``."""
    for name, tm in list(tms.items()):
        s.metrics[f"revision:{name}"] = float(running(name, tm))
        s.metrics.update(component_metrics(name, tm, labels, node_id))
        figures = CheckpointFigures.of(tm)  # the edge domain's, for the master's /metrics
        if figures is not None:
            s.metrics.update(figures.metrics(name))
        if tm.catalogue.error:  # checkpoints cannot be completed (a full disk)
            health.set(f"checkpoints:{name}", FAILED, tm.catalogue.error)
        else:
            health.clear(f"checkpoints:{name}")


def add_ingest_backlog(
    s: pb.NodeStatus, tms: Mapping[str, TopologyMaster], ends: Mapping[int, int], log_path: str
) -> None:
    """``ingest_backlog:T`` and ``ingest_end:T`` for each edge subgraph that reported what it
    committed of the ingest log at ``log_path`` (``ends``: each partition's end offset)."""
    prefix = f"log_committed:{log_path}#p"
    for name, tm in list(tms.items()):
        committed = {
            int(k[len(prefix) :]): v
            for k, v in tm.metrics.get("container:0", {}).items()
            if k.startswith(prefix) and k[len(prefix) :].isdigit()
        }
        if committed and ends:
            behind = sum(max(ends.get(p, 0) - offset, 0.0) for p, offset in committed.items())
            s.metrics[f"ingest_backlog:{name}"] = behind
            s.metrics[f"ingest_end:{name}"] = float(sum(ends.get(p, 0) for p in committed))


def add_ingest(s: pb.NodeStatus, st: IngestStats, paused: bool) -> None:
    """The MQTT ingestion's counters; ``paused``: acknowledgement stopped (an outbox full)."""
    s.metrics["mqtt_received"] = st.received
    s.metrics["mqtt_appended"] = st.appended
    s.metrics["mqtt_acked"] = st.acked
    s.metrics["mqtt_dropped_qos0"] = st.dropped_qos0
    s.metrics["mqtt_queued"] = st.queued
    s.metrics["mqtt_queued_bytes"] = st.queued_bytes
    s.metrics["ingest_write_errors"] = st.write_errors
    s.metrics["mqtt_connected"] = 1.0 if st.connected else 0.0
    s.metrics["mqtt_paused_s"] = st.paused_s
    s.metrics["mqtt_paused"] = 1.0 if paused else 0.0
    s.metrics["ingest_trimmed"] = st.trimmed
