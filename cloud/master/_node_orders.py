"""What the deployments give each node: the orders sent when a node attaches or work is dealt.

The node registry (``Nodes`` in ``_nodes.py``) knows who is attached; the
deployments (``_deployments.py``) know what runs. ``NodeOrders`` joins them:
it deals a deployment's edge subgraph to the agents its selectors match and
hands its cloud containers to the scheduler (``schedule``), re-sends a node
that re-attaches what it ran before (``attached``), answers the registry
whether a deployment gives a node a container it reports (``gives``), lists
the packages a node may fetch (``packages_of``), the revision each agent
reports for a topology's edge subgraph (``agent_revisions``) and forgets an
offline node (``forget``). It is also the schedulers' port (``SchedulerPort`` in
``_scheduler.py``): ``run`` sends a container's order to the node it was
assigned, ``save`` keeps the assignment, ``schedule_all`` deals what waits.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Placement

from ._deployments import Deployment, revise_order, run_order, state_order, stop_order
from ._nodes import Nodes

log = logging.getLogger("headwater.master")


class NodeOrders:
    """The orders the deployments give nodes (on the master's event loop; nothing blocks)."""

    def __init__(
        self,
        deployments: dict[str, Deployment],
        nodes: Nodes,
        *,
        place: Callable[[Deployment], None],
        save: Callable[[], None],
        spark_packages: Callable[[str], set[str]],
    ) -> None:
        """``place``: the scheduler's (assign cloud containers); ``save``: keep the
        deployments' record; ``spark_packages``: the Spark jobs' packages a node runs."""
        self.deployments = deployments
        self.nodes = nodes
        self._place = place
        self._save = save
        self._spark_packages = spark_packages

    # -- the schedulers' port ---------------------------------------------------------
    def run(self, dep: Deployment, container: int) -> None:
        """Order the node ``dep`` assigns ``container`` to run it."""
        self.nodes.send(dep.assignment[container], run_order(dep, container))

    def stop(self, node_id: str, topology: str, container: int) -> None:
        """Order ``node_id`` to stop ``topology``'s ``container``."""
        self.nodes.send(node_id, stop_order(topology, container))

    def save(self) -> None:
        """Keep the deployments' record (after an assignment changed)."""
        self._save()

    def schedule_all(self) -> None:
        """Deal what waits in every deployment (the scheduler, once workers have arrived)."""
        for dep in list(self.deployments.values()):
            self.schedule(dep)

    # -- dealing -----------------------------------------------------------------------
    def schedule(self, dep: Deployment) -> None:
        """Deal unassigned containers to attached workers, edge subgraphs to matching agents;
        the record is saved when that changed it.

        Every node that attaches runs this (``attached``), so it stays linear in the nodes:
        a re-attach storm of N agents costs N passes, not N² (``bench fleet``)."""
        dealt = set(dep.agents)
        before = (len(dep.agents), dict(dep.assignment))
        for node_id, record in self.nodes.records.items():
            labels = record.info.labels
            if (
                record.info.kind == "agent"
                and record.queue is not None
                and node_id not in dealt
                and any(Placement("edge", sel).matches(labels) for sel in dep.selectors)
            ):
                dealt.add(node_id)
                dep.agents.append(node_id)
                self.nodes.send(node_id, run_order(dep, 0, edge=True))
                self.nodes.send(node_id, state_order(dep))
                if dep.edge_revision:
                    self.nodes.send(node_id, revise_order(dep))
                log.info("edge subgraph of %r goes to agent %s", dep.name, node_id)
        self._place(dep)
        if (len(dep.agents), dep.assignment) != before:
            self._save()

    def attached(self, node_id: str) -> None:
        """Queue for a node that has just (re)attached what it ran before; then deal what
        waits (it may take some)."""
        for dep in list(self.deployments.values()):
            for c, node in dep.assignment.items():
                if node == node_id:
                    self.nodes.send(node_id, run_order(dep, c))
            if node_id in dep.agents:
                self.nodes.send(node_id, run_order(dep, 0, edge=True))
                self.nodes.send(node_id, state_order(dep))
                if dep.edge_revision:
                    self.nodes.send(node_id, revise_order(dep))
            self.schedule(dep)

    # -- what the registry asks --------------------------------------------------------
    def gives(self, kind: str, node_id: str, topology: str, container: int) -> bool:
        """Whether a deployment gives ``node_id`` that container (an agent: its edge subgraph)."""
        dep = self.deployments.get(topology)
        return dep is not None and (
            dep.assignment.get(container) == node_id if kind != "agent" else node_id in dep.agents
        )

    def agent_revisions(self, name: str) -> dict[str, int]:
        """Agent -> the revision its edge subgraph of ``name`` runs (as it last reported)."""
        dep = self.deployments.get(name)
        out: dict[str, int] = {}
        for agent in dep.agents if dep is not None else []:
            record = self.nodes.records.get(agent)
            status = record.status if record is not None else None
            if status is not None and f"revision:{name}" in status.metrics:
                out[agent] = int(status.metrics[f"revision:{name}"])
        return out

    def packages_of(self, node_id: str) -> set[str]:
        """The packages the master gave ``node_id`` to run (all it may fetch)."""
        out: set[str] = self._spark_packages(node_id)
        for dep in self.deployments.values():
            if node_id in dep.assignment.values():
                out.add(dep.package)
            if node_id in dep.agents:
                out.add(dep.package)
                if dep.edge_revision:
                    out.add(dep.edge_revision["package"])
        return out

    def forget(self, node_id: str) -> None:
        """Forget an offline node that holds no containers (its deployments drop it too).

        Raises KeyError for an unknown node and HeadwaterError while it is online
        or a topology's cloud containers are assigned to it (they would have
        nowhere to run). An agent's edge subgraphs are its own: forgetting it
        drops them from their deployments; if it comes back it attaches as any
        node does and is given them again.
        """
        held = sorted(
            f"{d.name}/{c}"
            for d in self.deployments.values()
            for c, n in d.assignment.items()
            if n == node_id
        )
        edge = [d for d in self.deployments.values() if node_id in d.agents]
        self.nodes.check_offline(node_id, known=bool(held or edge))
        if held:
            raise HeadwaterError(
                f"node {node_id!r} holds containers {', '.join(held)}: the master has nowhere "
                f"else to run them; restart the node or kill those topologies first"
            )
        for dep in edge:
            dep.agents.remove(node_id)
        self._save()
        self.nodes.forget(node_id)
