"""An agent's ``GET /metrics`` on its loopback status port, in the Prometheus text format.

What ``/status`` shows, as metric families built at scrape time: the agent's
own status (health, backlog, ingestion, uplinks, edge components; see
``common/node/_prometheus.py``) and the topology masters of its edge domains
(``common/control/_prometheus.py``, with ``domain`` the agent's id), so a
Prometheus next to the gateway sees its checkpoints and stream managers
while the link to the cloud is down. No credentials, as ``/status``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Protocol

from headwater.common._prometheus import Exposition, Families, FamilyCollector
from headwater.common.control._prometheus import add_topologies
from headwater.common.node._prometheus import add_node_status

if TYPE_CHECKING:
    from headwater.common.control import TopologyMaster
    from headwater.common.wire.proto import runtime_pb2 as pb


class AgentFigures(Protocol):
    """What the exposition reads of the agent: its id, link, status and edge domains."""

    @property
    def node_id(self) -> str: ...
    @property
    def attached(self) -> bool: ...
    @property
    def tms(self) -> Mapping[str, TopologyMaster]: ...
    def status(self) -> pb.NodeStatus: ...


def agent_exposition(agent: AgentFigures) -> Exposition:
    """The exposition of ``agent``'s figures; runs on the agent's event loop."""

    def fill(families: Families) -> None:
        families.gauge(
            "node_attached",
            "1 while the agent is attached to the master.",
            {"node": agent.node_id},
            1.0 if agent.attached else 0.0,
        )
        add_node_status(families, agent.node_id, agent.status(), checkpoints=False)
        add_topologies(families, list(agent.tms.values()), agent.node_id)

    return Exposition(FamilyCollector(fill))
