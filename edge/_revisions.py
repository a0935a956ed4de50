"""An agent's live edits: the revise orders it heard, and its edge subgraphs' switches to them.

A live edit that touches edge components reaches the agent as a revise
order (the newest revision; one that was offline gets it on re-attaching).
The agent loads the revision's edge subgraph for its labels and, if it
differs from the one running, has its topology master switch to it at a
checkpoint barrier, exactly as the cloud does: from the order until the
switch its edge spouts pause (they still pass the barrier on). A revision
that leaves the agent's subgraph as it is runs without a switch, and is the
revision the agent reports for it (``EdgeRevisions.running``). The newest
order heard is kept on the agent's disk with its other orders (``_orders.py``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from headwater.common._exceptions import HeadwaterError
from headwater.common._sandbox import RunAs
from headwater.common.api import Topology
from headwater.common.control import TopologyMaster
from headwater.common.control._revisions import RevisionRecord, diff, interrupted, without
from headwater.common.plan import edge_part, validate
from headwater.common.plan._child_loader import load_isolated_blocking
from headwater.common.wire.proto import runtime_pb2 as pb

log = logging.getLogger("headwater.edge.agent")


class EdgeRevisions:
    """The revisions of an agent's edge subgraphs: ordered, heard, being switched to."""

    def __init__(
        self,
        tms: Mapping[str, TopologyMaster],
        states: Mapping[str, str],
        labels: Mapping[str, str],
        code_dir: Callable[[str], Path],
        heard_changed: Callable[[], None],
        refused: Callable[[str], None],
        run_as: Callable[[str], RunAs | None],
    ) -> None:
        self.tms = tms  # the agent's topology masters, one per edge subgraph
        self.states = states  # activate/deactivate, as the master last said
        self.labels = labels
        self.code_dir = code_dir  # a package's folder in the agent's workdir
        self.heard_changed = heard_changed  # the newest order heard changed: keep it on disk
        self.refused = refused  # a revision this agent cannot take: why
        self._skeletons: dict[tuple[str, str, str], Topology] = {}  # (topology, package, entry)
        self.run_as = run_as  # a topology's user on this agent (None: the agent's own)
        self.pending: dict[str, pb.Revise] = {}  # topology -> the newest, not yet taken
        self.holding: set[str] = set()  # edge subgraphs paused until their switch
        self.heard: dict[str, pb.Revise] = {}  # topology -> the newest revise order heard
        # topology -> the newest revision that left this agent's subgraph as it was: the agent
        # runs that revision's edge part without switching (reported as its revision)
        self.unchanged_by: dict[str, int] = {}
        # topology -> a keyed move's state from the cloud, until its switch takes it
        self.states_in: dict[str, pb.MoveState] = {}
        self._handed: dict[str, object] = {}  # topology -> the edit it was handed to

    def resumed(self, orders: Iterable[pb.Revise]) -> None:
        """The revise orders kept on the agent's disk: heard, and to be taken."""
        for order in orders:
            self.heard[order.topology] = self.pending[order.topology] = order

    def skeleton(self, topology: str, package: str, entry: str) -> Topology:
        """The topology ``entry`` of ``package`` defines, as a code-free skeleton loaded once in
        a child process (``load_isolated``) that runs as ``topology``'s user where the agent
        has them: the agent never runs a topology's code itself, so code that runs at import
        cannot act with the agent's identity."""
        key = (topology, package, entry)
        known = self._skeletons.get(key)
        if known is None:
            folder, run_as = self.code_dir(package), self.run_as(topology)
            known = load_isolated_blocking(folder, entry, run_as=run_as)
            self._skeletons[key] = known
        return known

    def edge_topology(
        self, topology: str, package: str, entry: str, exclude: list[str]
    ) -> Topology:
        return edge_part(without(self.skeleton(topology, package, entry), exclude), self.labels)

    def loader(self, topology: str) -> Callable[[RevisionRecord], tuple[Topology, bytes]]:
        """``topology``'s edge topology master's loader: a revision's subgraph and package."""
        return lambda rec: self.load(topology, rec)

    def load(self, name: str, rec: RevisionRecord) -> tuple[Topology, bytes]:
        """A revision of ``name``: its edge subgraph and package."""
        topology = self.edge_topology(name, rec.package, rec.entry, rec.exclude)
        return topology, self.code_dir(rec.package).with_suffix(".zip").read_bytes()

    def revise(self, order: pb.Revise) -> None:
        known = self.pending.get(order.topology)
        if known is None or known.revision < order.revision:
            self.pending[order.topology] = order
        newest = self.heard.get(order.topology)
        if newest is None or newest.revision < order.revision:
            self.heard[order.topology] = order
            self.heard_changed()
        self.take(order.topology)

    def take(self, topology: str) -> None:
        """Start switching to the ordered revision once the subgraph's master is free."""
        order, tm = self.pending.get(topology), self.tms.get(topology)
        if order is None or tm is None or tm.edit is not None:
            return  # not running yet, or an edit under way: the next round tries again
        del self.pending[topology]
        had = tm.revlog.find(order.revision)
        if order.revision <= tm.current or (
            order.revision <= max(r.revision for r in tm.revlog.records)
            and not (had is not None and interrupted(had))
        ):  # had it (an order repeated on re-attaching); one the agent was killed while
            return  # switching to (rolled back on its restart) is taken again
        try:
            new = self.edge_topology(topology, order.package, order.entry, list(order.exclude))
            validate(new)
        except HeadwaterError as exc:
            self.refused(f"revision {order.revision} of {topology!r}: {exc}")
            return
        d = diff(tm.topology, new)
        if not (d.added or d.removed or d.replaced):
            log.info(
                "revision %d of %r leaves this agent's subgraph as it is", order.revision, topology
            )
            self.unchanged_by[topology] = order.revision
            return
        record = RevisionRecord(
            order.revision,
            order.action,
            order.package,
            order.entry,
            list(order.exclude),
            order.author,
            time.time(),
            d.to_dict(),
            {},
        )
        data = self.code_dir(order.package).with_suffix(".zip").read_bytes()
        try:
            tm.propose(record, new, data, tm.current, d.replaced, number=order.revision)
        except HeadwaterError as exc:
            self.refused(f"revision {order.revision} of {topology!r}: {exc}")
            return
        # nothing new is read under the old revision once the agent knows of the new one:
        # the edge spouts pause until the switch (they still pass its barrier on)
        self.holding.add(topology)
        tm.set_state("PAUSED")

    def hand_in(self, order: pb.MoveState) -> None:
        """A keyed move's state for this agent's site: its switch to ``order.revision`` takes
        it once its new tasks wait for it (``run``); an older one, or one for a revision it
        has, is dropped."""
        known = self.states_in.get(order.topology)
        tm = self.tms.get(order.topology)
        if (known is not None and known.revision > order.revision) or (
            tm is not None and _applied(tm, order.revision)
        ):
            return
        self.states_in[order.topology] = order

    def _hand_states(self) -> None:
        for topology, order in list(self.states_in.items()):
            tm = self.tms.get(topology)
            if tm is None:
                continue
            if _applied(tm, order.revision):  # its tasks have their keys
                del self.states_in[topology]
                continue
            edit = tm.edit
            if edit is None or self._handed.get(topology) is edit:
                continue
            if tm.edits.hand_in(order.revision, order.component, list(order.parts)):
                self._handed[topology] = edit

    async def run(self) -> None:
        """Resume the subgraphs whose switch ended, take the orders left waiting, and hand a
        move's state to the switch waiting for it; never stops."""
        while True:
            await asyncio.sleep(0.05)
            self._hand_states()
            for topology in list(self.pending):  # first: a subgraph started paused for one
                self.take(topology)
            for topology in list(self.holding):
                tm = self.tms.get(topology)
                if tm is None or tm.edit is None or tm.edit.phase == "activating":
                    self.holding.discard(topology)  # switched (or refused, rolled back)
                    if tm is not None:
                        tm.set_state(self.states.get(topology, "RUNNING"))

    def start_state(self, topology: str) -> str:
        """The user state a subgraph (re)starts in: paused while a revise order it heard
        waits to be taken, so nothing is read under the old revision once the agent knows
        of the new one (an agent killed in a switch restarts from its barrier; a keyed
        move's fence may be in the cloud already); as the master last said otherwise."""
        if topology in self.pending:
            self.holding.add(topology)
            return "PAUSED"
        return self.states.get(topology, "RUNNING")

    def running(self, topology: str, tm: TopologyMaster) -> int:
        """The revision the agent runs of ``topology``: its master's, or a newer one that
        left its subgraph as it was."""
        return max(tm.current, self.unchanged_by.get(topology, 0))

    def forget(self, topology: str) -> None:
        """The topology was stopped for good here."""
        self.pending.pop(topology, None)
        self.heard.pop(topology, None)
        self.unchanged_by.pop(topology, None)


def _applied(tm: TopologyMaster, revision: int) -> bool:
    """Whether ``tm`` runs ``revision`` (or a later one) with its switch over."""
    edit = tm.edit
    return tm.current >= revision and (edit is None or edit.revision < revision)
