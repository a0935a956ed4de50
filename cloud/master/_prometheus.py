"""The master's ``GET /metrics``: the cluster in the Prometheus text format.

Built at scrape time from what the JSON API reads, in a registry of the
master's own:

- every cloud topology's topology master (``common/control/_prometheus.py``,
  ``domain="cloud"``): state, health, per component, task and stream manager,
  checkpoints;
- every node (``common/node/_prometheus.py``): online, heartbeat age, health,
  backlog, uplinks, revisions, edge components, and the checkpoints of each
  agent's edge domain as the agent reports them (``domain`` = its id);
- model rollouts: the phase of the newest rollout per model and component;
- the bytes and messages of the master's gRPC server, per method.

A viewer's token reads it, like every GET (``cloud/_access.py``).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from headwater.common._prometheus import Exposition, Families, FamilyCollector
from headwater.common.control._prometheus import add_topologies
from headwater.common.node._prometheus import add_node_status

from ._nodes import NODE_OFFLINE_AFTER_S
from ._rollout import Phase

if TYPE_CHECKING:
    from ._master import Master
    from ._rollout import Rollout


def master_exposition(master: Master) -> Exposition:
    """The exposition of ``master``'s figures; runs on the master's event loop."""
    return Exposition(FamilyCollector(lambda families: fill(families, master)))


def fill(families: Families, master: Master) -> None:
    add_topologies(families, list(master.tms.values()), "cloud")
    add_nodes(families, master)
    add_rollouts(families, master.rollouts.records)
    add_traffic(families, master)


def add_nodes(families: Families, master: Master) -> None:
    now = time.monotonic()
    for node_id, record in sorted(master.nodes.records.items()):
        info = record.info
        labels = {"node": node_id}
        age = now - record.last_seen
        online = record.queue is not None and age < NODE_OFFLINE_AFTER_S
        families.gauge(
            "node_info",
            "A node the master knows, with its kind, version and host.",
            {**labels, "kind": info.kind, "version": info.version, "hostname": info.hostname},
            1.0,
        )
        families.gauge("node_online", "1 if the node is attached and reports.", labels, online)
        families.gauge(
            "node_heartbeat_age_seconds", "Since the node's last status report.", labels, age
        )
        add_node_status(families, node_id, record.status, online=online)


def add_rollouts(families: Families, rollouts: list[Rollout]) -> None:
    """The newest rollout (or rollback) of each model, topology and component."""
    newest: dict[tuple[str, str, str], Rollout] = {}
    for r in rollouts:
        key = (r.model, r.topology, r.component)
        if key not in newest or r.id > newest[key].id:
            newest[key] = r
    for (model, topology, component), r in sorted(newest.items()):
        labels = {"model": model, "topology": topology, "component": component}
        for phase in Phase:
            families.gauge(
                "model_rollout_phase",
                "1 for the phase of the newest rollout of the model to the component.",
                {**labels, "phase": phase.value},
                1.0 if r.phase is phase else 0.0,
            )
        families.gauge(
            "model_rollout_version",
            "The version the newest rollout brings (0: a rollback).",
            labels,
            r.version,
        )


def add_traffic(families: Families, master: Master) -> None:
    for method, t in sorted(master.traffic.methods.items()):
        labels = {"method": method}
        families.counter("master_grpc_received_bytes", "gRPC bytes received.", labels, t.bytes_in)
        families.counter("master_grpc_sent_bytes", "gRPC bytes sent.", labels, t.bytes_out)
        families.counter(
            "master_grpc_received_messages", "gRPC messages received.", labels, t.messages_in
        )
        families.counter("master_grpc_sent_messages", "gRPC messages sent.", labels, t.messages_out)
