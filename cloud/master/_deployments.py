"""The master's deployments: what runs, its record on disk, and the orders it gives nodes.

A ``Deployment`` is one submitted topology as the master keeps it: its
package and entry, its containers and the node each is assigned to, the
agents that run its edge subgraph, its state and its newest edge revision.
``Deployments`` holds them with their topology masters (and the tasks that
run their checkpoint coordinators), keeps ``deployments.json`` in the master's
state (each topology master its records under ``topologies/NAME``), starts a
topology master (``begin``), kills a topology, sets its state, and says where
a receiver runs (``locate``). A recorded deployment that cannot be resumed (its
package is not in this master's store, its file no longer loads) is held: kept in
the record as it was, listed with the reason, until it is killed; never dropped
from a record other masters may share. The orders to nodes (``run_order``,
``state_order``, ``revise_order``, ``stop_order``) are built here so that the
parts that send them (``_node_orders.py``, the schedulers, the edits) say
them one way.

Nothing here imports the master: the scheduler's ``removed`` and the node
registry's ``send`` are handed in.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from typing import Any

from headwater.common._exceptions import HeadwaterError
from headwater.common._ids import name_problem
from headwater.common._package import entry_problem
from headwater.common.api import Topology
from headwater.common.control import TopologyMaster
from headwater.common.control._revisions import EditError, RevisionLog
from headwater.common.plan import cloud_part, pack_round_robin
from headwater.common.plan._domains import receives_uplink
from headwater.common.statemgr import Record, StateError, StateManager, under
from headwater.common.wire.proto import runtime_pb2 as pb

from ._code import TopologyCode

log = logging.getLogger("headwater.master")
MAX_CONTAINERS = 256
"""The most containers one topology may ask for."""

Send = Callable[[str, pb.NodeCommand], None]
"""The node registry's ``send``: queue an order on a node's attach stream."""


def topology_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a topology (it names folders), or None if it can."""
    return name_problem(name, "topology name")


@dataclass
class Deployment:
    name: str
    package: str
    entry: str
    containers: int
    assignment: dict[int, str] = field(default_factory=dict)  # container -> node id
    agents: list[str] = field(default_factory=list)  # agents running its edge subgraph
    selectors: list[dict[str, str]] = field(default_factory=list)  # of its edge components
    state: str = "RUNNING"  # activate/deactivate, for the cloud and every agent
    # the newest revision that changed edge components (every agent switches to it)
    edge_revision: dict[str, Any] = field(default_factory=dict)


def run_order(dep: Deployment, container: int, edge: bool = False) -> pb.NodeCommand:
    """The order to run ``dep``'s ``container`` (``edge``: its edge subgraph, on an agent)."""
    return pb.NodeCommand(
        run=pb.RunContainer(
            topology=dep.name,
            container=container,
            containers=1 if edge else dep.containers,
            package=dep.package,
            entry=dep.entry,
            domain="edge" if edge else "cloud",
        )
    )


def state_order(dep: Deployment) -> pb.NodeCommand:
    return pb.NodeCommand(set_state=pb.SetState(topology=dep.name, state=dep.state))


def revise_order(dep: Deployment) -> pb.NodeCommand:
    return pb.NodeCommand(revise=pb.Revise(topology=dep.name, **dep.edge_revision))


def stop_order(topology: str, container: int) -> pb.NodeCommand:
    return pb.NodeCommand(stop=pb.StopContainer(topology=topology, container=container))


class Deployments:
    """The running deployments, their topology masters and their record (on the master's
    event loop)."""

    def __init__(
        self, state: StateManager, code: TopologyCode, send: Send, removed: Callable[[str], None]
    ) -> None:
        """``state``: the master's; ``send``: an order to a node; ``removed``: tell the
        scheduler a topology was killed."""
        self.state = state
        self.record = Record(state, "deployments.json")
        self.topologies = under(state, "topologies")
        self.code = code
        self.send = send
        self.removed = removed
        # a keyed move's state to the edge, gathered by a topology master (set by the master)
        self.site_state_ready: Callable[[pb.MoveState], None] = lambda msg: None
        self.deployments: dict[str, Deployment] = {}
        self.held: dict[str, tuple[Deployment, str]] = {}  # not resumed: why
        self.tms: dict[str, TopologyMaster] = {}
        self.coordinators: dict[str, asyncio.Task[None]] = {}

    # -- the record ----------------------------------------------------------------
    def save(self) -> None:
        """Keep the record (the held deployments too); StateError if it was not kept."""
        kept = [*self.deployments.values(), *(dep for dep, _ in self.held.values())]
        self.record.write(json.dumps([asdict(d) for d in kept]).encode())

    def recorded(self) -> Iterator[Deployment]:
        """The deployments the record keeps (one whose names are not safe is said and
        skipped)."""
        kept = self.record.read()
        for d in json.loads(kept) if kept is not None else []:
            problem = topology_name_problem(d["name"]) or entry_problem(d["entry"])
            if problem is not None:
                log.error("not resuming a deployment: %s", problem)
                continue
            yield Deployment(
                d["name"],
                d["package"],
                d["entry"],
                d["containers"],
                {int(k): v for k, v in d["assignment"].items()},
                d.get("agents", []),
                d.get("selectors", []),
                d.get("state", "RUNNING"),
                d.get("edge_revision", {}),
            )

    def hold(self, dep: Deployment, reason: str) -> None:
        """Keep ``dep`` in the record without running it (``reason``: why it did not resume)."""
        self.held[dep.name] = (dep, reason)

    def held_views(self, name: str | None = None) -> list[dict[str, Any]]:
        """What the API lists of the held deployments (``name``'s alone, if given)."""
        names = sorted(self.held) if name is None else [name] if name in self.held else []
        return [self._held_view(n) for n in names]

    def _held_view(self, name: str) -> dict[str, Any]:
        """A held deployment: its record, why it is held, and its revision history as the
        state keeps it."""
        dep, reason = self.held[name]
        try:
            revisions = RevisionLog(Record(self.topologies, f"{name}/revisions.json")).records
        except (ValueError, TypeError, HeadwaterError):
            revisions = []
        return {
            "name": name,
            "state": dep.state,
            "held": reason,
            "package": dep.package,
            "entry": dep.entry,
            "revision": max((r.revision for r in revisions), default=0),
            "revisions": [r.view() for r in revisions],
            "containers": [],
            "components": [],
        }

    # -- topology masters ------------------------------------------------------------
    async def revisions_described(
        self, dep: Deployment, whole: Topology | None = None
    ) -> dict[tuple[str, str], Topology]:
        """The skeletons of the files ``dep``'s revisions run (``whole``: its first file's)."""
        first = (dep.package, dep.entry)
        return await self.code.of_revisions(dep.name, first, self.topologies, whole)

    def begin(self, dep: Deployment, described: dict[tuple[str, str], Topology]) -> None:
        """Start ``dep``'s topology master (no await: the caller checked its name just now)."""
        self.code.remember(described)  # its topology master may load any revision now
        topology = cloud_part(described[(dep.package, dep.entry)])
        plan = pack_round_robin(topology, dep.containers)
        try:
            tm = TopologyMaster(
                topology,
                plan,
                under(self.topologies, dep.name),
                dep.package,
                dep.entry,
                self.code.load_revision,
            )
        except BaseException:
            self.forget_described()
            raise
        tm.user_state = dep.state
        tm.site_states.ready = lambda msg: self.site_state_ready(msg)  # noqa: PLW0108 (set later)
        self.deployments[dep.name] = dep
        self.tms[dep.name] = tm
        self.coordinators[dep.name] = asyncio.get_running_loop().create_task(tm.run_coordinator())

    def forget_described(self) -> None:
        """Keep the skeletons of running topologies' revisions only."""
        self.code.keep_only(
            (r.package, r.entry) for t in self.tms.values() for r in t.revlog.records
        )

    def running(self, name: str) -> TopologyMaster:
        """The topology master of ``name``; HeadwaterError naming those that run if none."""
        tm = self.tms.get(name)
        if tm is None:
            known = ", ".join(sorted(self.deployments)) or "none"
            raise HeadwaterError(f"no topology named {name!r} (running: {known})")
        return tm

    # -- requests ------------------------------------------------------------------
    def kill(self, name: str) -> None:
        problem = topology_name_problem(name)
        if problem is not None:
            raise EditError(problem)
        if name in self.held:  # never run here: its record and its state go
            self.held.pop(name)
            self.topologies.delete(name)
            self.save()
            log.info("killed %r (held: it was not running here)", name)
            return
        if name not in self.deployments:
            known = ", ".join(sorted(self.deployments)) or "none"
            raise HeadwaterError(f"no topology named {name!r} (running: {known})")
        self._stop(name)
        self.save()  # the record first: its topology master's records are gone with it
        self.topologies.delete(name)
        log.info("killed %r", name)

    def withdraw(self, name: str) -> None:
        """Stop ``name``, just begun, whose record could not be kept (its submission fails):
        as if it had never been submitted."""
        self._stop(name)
        try:
            self.topologies.delete(name)
        except StateError as exc:
            log.warning("the records of withdrawn topology %r stay: %s", name, exc)

    def _stop(self, name: str) -> None:
        dep = self.deployments.pop(name)
        self.tms.pop(name)
        self.coordinators.pop(name).cancel()
        self.removed(name)
        for container, node_id in dep.assignment.items():
            self.send(node_id, stop_order(name, container))
        for agent in dep.agents:
            self.send(agent, stop_order(name, 0))
        self.forget_described()

    def set_state(self, name: str, state: str) -> None:
        """Activate or deactivate a topology: its cloud master did; now its agents."""
        dep = self.deployments.get(name)
        if dep is None:
            return
        dep.state = state
        self.save()
        for agent in dep.agents:
            self.send(agent, state_order(dep))

    def locate(self, topology: str, component: str) -> pb.ReceiverAddress:
        """Where the receiver of ``component`` runs: its container's stream manager.

        The agent dials it there (the master keeps only who is where). Raises
        KeyError when there is no such receiver, LookupError while its container
        has not registered (yet).
        """
        tm = self.tms.get(topology)
        receiver = tm is not None and any(  # receivers stand in for edge components as spouts
            c.name == component and receives_uplink(c) for c in tm.topology.components
        )
        container = tm.container_of(component) if tm is not None and receiver else None
        if tm is None or container is None:
            raise KeyError(f"no receiver of {component!r} in topology {topology!r}")
        info = tm.containers.get(container)
        if info is None or not info.stmgr_address:
            raise LookupError(f"container {container} of {topology!r} is not running (yet)")
        return pb.ReceiverAddress(
            address=info.stmgr_address, container=container, incarnation=info.incarnation
        )
