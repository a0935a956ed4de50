"""The agent's edge checkpoint domains: per edge subgraph it runs, the topology master it
hosts and that master's checkpoint coordinator.

Each subgraph is its own checkpoint domain (so the agent checkpoints while its
link is down), its state under ``WORKDIR/TOPOLOGY/tmaster-state``; the agent's
loopback server (``TopologyDispatch``) hands its containers to these masters.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from headwater.common._health import FAILED, Health
from headwater.common.api import Topology
from headwater.common.control import TopologyMaster
from headwater.common.control._revisions import RevisionRecord
from headwater.common.plan import pack_round_robin, validate
from headwater.common.wire.proto import runtime_pb2 as pb

from ._ingest_log import describe_write_error

log = logging.getLogger("headwater.edge.agent")
Loader = Callable[[RevisionRecord], tuple[Topology, bytes]]


class EdgeDomains:
    """The topology masters of the agent's edge subgraphs (``tms``, by topology) and their
    coordinators' tasks."""

    def __init__(self, workdir: Path, health: Health) -> None:
        self.workdir = workdir
        self.health = health
        self.tms: dict[str, TopologyMaster] = {}  # one per edge subgraph: its own domain
        self._coordinators: dict[str, asyncio.Task[None]] = {}

    def open(self, run: pb.RunContainer, topology: Topology, loader: Loader, state: str) -> bool:
        """Host ``topology``, ``run.topology``'s edge subgraph, in the user state ``state``;
        False where its state cannot be written (a full disk: said in the health)."""
        validate(topology)
        plan = pack_round_robin(topology, 1)
        try:
            tm = TopologyMaster(
                topology,
                plan,
                self.workdir / run.topology / "tmaster-state",
                run.package,
                run.entry,
                loader,
                health=self.health,
            )
        except OSError as exc:  # a full disk: say so (the agent tries again until it is not)
            self.health.set(
                f"edge:{run.topology}",
                FAILED,
                f"cannot start the edge subgraph: {describe_write_error(self.workdir, exc)}",
            )
            return False
        self.health.clear(f"edge:{run.topology}")
        tm.user_state = state
        self.tms[run.topology] = tm
        self._coordinators[run.topology] = asyncio.get_running_loop().create_task(
            tm.run_coordinator()
        )
        log.info(
            "edge subgraph of %r: %s", run.topology, ", ".join(c.name for c in topology.components)
        )
        return True

    def close(self, topology: str) -> None:
        """``topology`` stopped here for good: its master goes, its coordinator stops, and
        what the health said of it."""
        for reason in (f"edge:{topology}", f"checkpoints:{topology}"):
            self.health.clear(reason)
        self.tms.pop(topology, None)
        task = self._coordinators.pop(topology, None)
        if task is not None:
            task.cancel()

    def stop(self) -> None:
        """The agent stops: every coordinator stops."""
        for task in self._coordinators.values():
            task.cancel()
