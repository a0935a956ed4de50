"""An agent's own console: the web console on its status port, for the subgraphs it runs.

The page and routes of ``common/console/`` on ``127.0.0.1:STATUS_PORT`` beside
``GET /status``, so that a gateway's operator sees the edge DAG, its rates and
the backlog even while the link to the cloud is down. Like the rest of that
port it is loopback only and asks no credentials, and it only reads: the page
shows no edit control (edits come from the master).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Protocol

from aiohttp import web

from headwater.common.console import add_console, topology_detail, topology_row

if TYPE_CHECKING:
    from headwater.common.control import TopologyMaster
    from headwater.common.wire.proto import runtime_pb2 as pb

_COUNTED = ("emitted", "executed", "exceptions", "dead_letters")


class ConsoleAgent(Protocol):
    """What the console reads of the agent: its id, labels, link, status and edge domains."""

    @property
    def node_id(self) -> str: ...
    @property
    def labels(self) -> Mapping[str, str]: ...
    @property
    def attached(self) -> bool: ...
    @property
    def tms(self) -> Mapping[str, TopologyMaster]: ...
    def status(self) -> pb.NodeStatus: ...


def add_agent_console(app: web.Application, agent: ConsoleAgent) -> None:
    """Add the console's routes to ``agent``'s status ``app``."""
    add_console(
        app, partial(snapshot, agent), lambda request: ("viewer", None), False, insecure=True
    )


def snapshot(agent: ConsoleAgent, topology: str | None = None) -> dict[str, Any]:
    """This agent's topologies (its edge subgraphs), itself as the one node, no models."""
    s = agent.status()
    uplinks = {
        u.topology: {**dict(u.metrics), "connected": 1.0 if u.connected else 0.0} for u in s.uplinks
    }
    node = {
        "id": agent.node_id,
        "kind": "agent",
        "labels": dict(agent.labels),
        "online": agent.attached,  # to the master
        "last_heartbeat_s_ago": 0.0,
        "backlog_bytes": s.backlog_bytes,
        "backlog_batches": s.backlog_batches,
        "metrics": dict(s.metrics),
        "uplinks": uplinks,
        "health": s.health or "ok",
        "reasons": list(s.reasons),
    }
    own = {t: _own(agent, tm, node, uplinks.get(t, {})) for t, tm in sorted(agent.tms.items())}
    out: dict[str, Any] = {
        "time": time.time(),
        "topologies": [
            topology_row(tm, tm.topology, {agent.node_id: own[t]}, all_edge=True)
            for t, tm in sorted(agent.tms.items())
        ],
        "nodes": [node],
        "models": [],
    }
    if topology is not None:
        tm = agent.tms.get(topology)
        if tm is None:
            out["topology"] = None
        else:
            detail = topology_detail(tm, tm.topology, {agent.node_id: own[topology]}, {})
            for c in detail["components"]:  # its outbox sinks too: all of it runs here
                c["side"] = "edge"
            out["topology"] = detail
    return out


def _own(
    agent: ConsoleAgent, tm: TopologyMaster, node: dict[str, Any], uplink: dict[str, float]
) -> dict[str, Any]:
    """This agent as the one agent of ``tm``'s page: its figures and per-component counts."""
    return {
        "online": True,  # this page is the agent itself
        "health": node["health"],
        "reasons": node["reasons"],
        "backlog_bytes": node["backlog_bytes"],
        "uplink": uplink,
        "revision": tm.current,
        "components": {
            c: {k: v for k, v in values.items() if k in _COUNTED}
            for c, values in tm.metrics_view()["components"].items()
        },
    }
