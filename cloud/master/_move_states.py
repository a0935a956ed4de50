"""A keyed move's state on its way to the edge: sent to the agent of its site (issue 37).

The cloud's topology master gathers, per site, the keys every task of the moved component
gave up at that site's fence (``common/control/_site_states.py``). ``MoveStates`` sends them
to the agents of the deployment whose label (the component's sites field) names that site,
as a ``MoveState`` order, and again to one that re-attaches: the agent takes it once, when
its switch to that revision waits for it, and ignores it otherwise (``edge/_revisions.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from headwater.common.api._config import SITES
from headwater.common.control import TopologyMaster
from headwater.common.wire.proto import runtime_pb2 as pb

from ._deployments import Deployment
from ._nodes import Nodes

log = logging.getLogger("headwater.master")


class MoveStates:
    def __init__(
        self, deployments: Mapping[str, Deployment], tms: Mapping[str, TopologyMaster], nodes: Nodes
    ) -> None:
        self.deployments = deployments
        self.tms = tms
        self.nodes = nodes

    def ready(self, msg: pb.MoveState) -> None:
        """A site's state, gathered: to its agent."""
        agents = self._agents(msg)
        if not agents:
            log.warning(
                "revision %d of %r: no agent has site %r, so %s's keys of it stay in the cloud",
                msg.revision,
                msg.topology,
                msg.site,
                msg.component,
            )
        for agent in agents:
            self.nodes.send(agent, pb.NodeCommand(move_state=msg))

    def attached(self, node_id: str) -> None:
        """Send a re-attached agent what its site was handed (it may not have taken it)."""
        for tm in self.tms.values():
            for msg in tm.site_states.gathered.values():
                if node_id in self._agents(msg):
                    self.nodes.send(node_id, pb.NodeCommand(move_state=msg))

    def _agents(self, msg: pb.MoveState) -> list[str]:
        dep, tm = self.deployments.get(msg.topology), self.tms.get(msg.topology)
        if dep is None or tm is None:
            return []
        try:
            field = tm.topology.component(msg.component).config.get(SITES)
        except KeyError:
            return []
        out = []
        for agent in dep.agents:
            record = self.nodes.records.get(agent)
            if record is not None and record.info.labels.get(str(field)) == msg.site:
                out.append(agent)
        return out
