"""The topology master (tmaster): the control plane of one checkpoint domain.

Not to be confused with the *master*, the cloud daemon that hosts one
topology master per cloud topology (an edge agent hosts one per edge subgraph
it runs, and ``headwater run`` one in a process of its own).

Containers register with their stream manager's address; once all have,
the topology master publishes the physical plan (with every address) to every
watcher, and again whenever a container re-registers (a restart moves its
address). ``TopologyMaster`` holds the plan and its revisions, keeps the
containers' session (registrations, heartbeats, metrics and each watcher's
command queue) in a ``ContainerSession`` (``_container_session``), and composes
the coordinators, each of one message family:

- ``CheckpointCoordinator`` (``_checkpoints``): checkpoint requests and acks;
- ``Recovery`` (``_recovery``): epochs, restores and their acks, the rollback
  throttle;
- ``EditCoordinator`` (``_edits``): live edits, from proposed to applied;
- ``Watchdog`` (``_watchdog``): crash loops and what the topology waits for.

It orchestrates what crosses them (a failure fails the checkpoint in flight,
rolls an edit back and restores the revision that took the checkpoint). The
gRPC servicer is ``TopologyDispatch`` (``_servicer``); the JSON views are in
``_views``. Runs on one event loop; nothing here is threadsafe.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import aclosing
from pathlib import Path
from typing import Any

from .._clock import SYSTEM_CLOCK, Clock
from .._health import Health
from ..api import Reliability, RuntimeConfig, Topology
from ..api._config import CHECKPOINT_INTERVAL_SECS
from ..plan import PhysicalPlan
from ..statemgr import Record, StateManager, as_state
from ..wire._states import RevisionStatus, TopologyState
from ..wire.proto import runtime_pb2 as pb
from . import _views as views
from ._catalogue import Catalogue, CheckpointRecord, check_same_topology
from ._checkpoints import CheckpointCoordinator
from ._container_session import ContainerSession
from ._crashloop import DEFAULT_POLICY, CrashLoopPolicy
from ._edits import Edit, EditCoordinator
from ._recovery import Recovery, RestoreAck
from ._revision_set import Revision, RevisionLoader, RevisionSet, instance_infos
from ._revisions import RevisionLog, RevisionRecord, first_record
from ._site_states import SiteStates
from ._watchdog import Watchdog

log = logging.getLogger("headwater.tmaster")


class TopologyMaster:
    def __init__(
        self,
        topology: Topology,
        plan: PhysicalPlan,
        state_dir: Path | StateManager,
        package: str = "",
        entry: str = "",
        load_revision: RevisionLoader | None = None,
        *,
        health: Health | None = None,
        crash_loop: CrashLoopPolicy = DEFAULT_POLICY,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        """``state_dir``: a folder, or the master's state under ``topologies/NAME``.
        ``health``: the hosting node's, which then shows this topology's crash loops,
        failing checkpoints and a stuck restore (an agent passes its own)."""
        self.topology, self.plan, self.clock = topology, plan, clock
        rc = RuntimeConfig.from_mapping(topology.config)
        self.exactly_once = rc.reliability is Reliability.EXACTLY_ONCE
        if isinstance(state_dir, Path):
            state_dir.mkdir(parents=True, exist_ok=True)
        state = as_state(state_dir)  # topology.json, catalogue.json, revisions.json
        check_same_topology(Record(state, "topology.json"), topology, plan)
        self.catalogue = Catalogue(Record(state, "catalogue.json"), clock)
        self._user_state = TopologyState.RUNNING  # what activate/deactivate asked for
        self.plan_version = 0  # grows with every plan sent to the containers
        self.revlog = RevisionLog(Record(state, "revisions.json"))
        if not self.revlog.records:
            self.revlog.add(first_record(package, entry, plan.to_dict()))
        first = Revision(topology, plan, self.revlog.records[0], b"")
        self.revisions = RevisionSet(self.revlog, first, load_revision)
        self.current = 1  # the revision running
        self.started = clock.time()
        session = self.session = ContainerSession(clock)
        # the session's (read by the views, the watchdog and the hosts)
        self.containers, self.last_heartbeat = session.containers, session.last_heartbeat
        self.metrics, self.exceptions = session.metrics, session.exceptions
        self.broadcast = session.broadcast  # a command for every container
        self.send_to = session.send_to  # for one: False when it is not watching
        self.edits = EditCoordinator(self, clock=clock)
        # the running plan's tasks (``self.plan`` changes with each revision)
        self.site_states = SiteStates(topology.name, lambda c: self.plan.tasks(c))  # noqa: PLW0108
        interval_s = float(topology.config.get(CHECKPOINT_INTERVAL_SECS, 3.0))
        self.checkpoints = CheckpointCoordinator(
            self.catalogue,
            interval_s=interval_s,
            tasks=lambda: len(self.plan.instances),
            broadcast=self.broadcast,
            on_complete=self.edits.checkpoint_complete,
            clock=clock,
        )
        self.recovery = Recovery(self.catalogue, publish=self._publish, clock=clock)
        self.watchdog = Watchdog(self, policy=crash_loop, health=health, clock=clock)
        if self.exactly_once:
            # every start is a new epoch (it cannot know what was in flight), restored
            # from the last complete checkpoint once the containers watch
            target = self.recovery.open_epoch()
            rec = self.catalogue.find(target)
            self._run_revision(rec.revision if rec is not None else 1)
            self.recovery.begin(target, self.current, throttled=False)
            self.watchdog.observe()

    # -- state -------------------------------------------------------------------------
    @property
    def epoch(self) -> int:
        return self.catalogue.epoch

    @property
    def user_state(self) -> TopologyState:
        return self._user_state

    @user_state.setter
    def user_state(self, state: str) -> None:
        self._user_state = TopologyState(state)

    @property
    def state(self) -> TopologyState:
        if self.recovery.restoring is not None:
            return TopologyState.RESTORING
        return self.user_state

    @property
    def edit(self) -> Edit | None:
        return self.edits.edit

    def set_state(self, state: str) -> None:
        """Activate (``RUNNING``) or deactivate (``PAUSED``) the topology."""
        self.user_state = TopologyState(state)
        self.watchdog.observe()
        self._publish()

    # -- the containers' calls (through TopologyDispatch) ----------------------------------
    def register(self, request: pb.RegisterRequest) -> pb.RegisterResponse:
        if request.topology != self.topology.name:
            return pb.RegisterResponse(
                accepted=False, reason=f"this topology master runs {self.topology.name!r}"
            )
        info = request.container
        old = self.session.register(info)
        if old is None or old.stmgr_address != info.stmgr_address:
            log.info("container %d registered at %s", info.container, info.stmgr_address)
            restarted = old is not None and old.incarnation != info.incarnation
            if restarted:
                self.watchdog.failed(0, info.container, f"container {info.container} restarted")
            if restarted and self.exactly_once:
                self.begin_restore(f"container {info.container} restarted")
            else:
                self._publish()
        return pb.RegisterResponse(accepted=True)

    async def watch(self, container: int) -> AsyncIterator[pb.Command]:
        """The command stream of one container: where it stands now, then every command."""
        # closed with this stream, so that the session forgets its queue at once
        async with aclosing(self.session.watch(container, self._opening)) as commands:
            async for command in commands:
                yield command

    def _opening(self) -> Iterator[pb.Command]:
        """Where the domain stands, for a container that starts watching."""
        if self.current != 1:  # a container (re)starts with the first revision's code
            yield pb.Command(revision=self.revision_message(self.current))
        current = self.physical_plan()
        if current is not None:
            yield pb.Command(plan=current)
            if self.recovery.restoring is not None:
                yield pb.Command(restore=self.recovery.restoring)

    def heartbeat(self, request: pb.Heartbeat) -> pb.HeartbeatAck:
        self.session.heartbeat(request)
        return pb.HeartbeatAck(plan_revision=self.plan_version)

    def ack_restore(self, request: pb.RestoreAck) -> None:
        self.session.heard_from(request.container)
        outcome = self.recovery.ack(request, self.plan.containers)
        if outcome is RestoreAck.UNUSABLE:
            self.session.report("checkpoint", request.error)
            self.begin_restore(
                f"checkpoint {request.checkpoint_id} unusable", below=request.checkpoint_id
            )
        elif outcome is RestoreAck.DONE:
            self.checkpoints.restart_interval()
            self.watchdog.observe()
            self._publish()

    def report_failure(self, request: pb.FailureReport) -> None:
        """An instance died (every mode: crash loops are counted) or a container failed."""
        self.watchdog.failed(request.task_id, request.container, request.reason)
        if self.exactly_once:
            self.begin_restore(f"container {request.container}: {request.reason}")

    def ack_switch(self, request: pb.SwitchAck) -> None:
        self.session.heard_from(request.container)
        idle = self.checkpoints.in_flight is None
        self.edits.switch_ack(request, containers=self.plan.containers, idle=idle)

    # -- recovery ------------------------------------------------------------------------
    def begin_restore(self, reason: str, below: int | None = None) -> None:
        """Roll the domain back to its last complete checkpoint (below ``below``)."""
        self.checkpoints.abandon()
        target = self.recovery.open_epoch(below)
        log.warning("%s: rolling back to checkpoint %d (epoch %d)", reason, target, self.epoch)
        self.edits.roll_back(reason)
        rec = self.catalogue.find(target)
        self._run_revision(rec.revision if rec is not None else 1)
        self.recovery.begin(target, self.current)
        self.watchdog.observe()

    async def run_coordinator(self) -> None:
        """Trigger checkpoints on the interval; time out stuck ones; keep health in step."""
        try:
            next_tick = 0.0
            while True:
                await asyncio.sleep(
                    min(0.1, self.checkpoints.interval_s / 4) if self.exactly_once else 0.5
                )
                now = self.clock.monotonic()
                if now >= next_tick:
                    self.watchdog.tick()
                    next_tick = now + 1.0
                if self.exactly_once:
                    self.step()
        finally:
            self.watchdog.close()

    def step(self) -> None:
        """One turn of the exactly-once coordinators (``run_coordinator`` calls it)."""
        self.recovery.release_due()
        ready = (
            self.recovery.restoring is None
            and self.checkpoints.in_flight is None
            and len(self.containers) >= self.plan.containers  # all registered (no plan built)
        )
        self.edits.step(
            ready=ready, next_checkpoint=self.catalogue.next_id, containers=self.plan.containers
        )
        if self.checkpoints.check_timeout():
            return
        if (
            self.recovery.restoring is None
            and self.user_state is TopologyState.RUNNING
            and self.checkpoints.due()
            and len(self.containers) >= self.plan.containers
            and not self.edits.holds_checkpoints(self.plan.containers)
        ):
            self.trigger_checkpoint()

    # -- live edits ------------------------------------------------------------------
    def propose(
        self,
        record: RevisionRecord,
        topology: Topology,
        data: bytes,
        base: int,
        replaced: tuple[str, ...],
        number: int = 0,
    ) -> RevisionRecord:
        """Start applying a revision made against ``base``; raise EditError if it cannot be.

        It is numbered next in this topology master's history, or ``number`` (an
        agent's edge domain takes the numbers of the revisions the master makes).
        """
        self.edits.check_start(base, self.current, exactly_once=self.exactly_once)
        rescaled = self.revisions.propose(record, topology, data, self.plan, replaced, number)
        self.edits.start(record.revision, replaced, rescaled)
        log.info(
            "revision %d proposed (%s by %s): %s",
            record.revision,
            record.action,
            record.author or "?",
            record.diff,
        )
        return record

    # EditPorts: what the edit coordinator asks of this topology master
    def revision_message(
        self, revision: int, switch_at: int = 0, replaced: tuple[str, ...] = ()
    ) -> pb.Revision:
        return self.revisions.message(self.topology.name, revision, switch_at, replaced)

    def trigger_checkpoint(self) -> CheckpointRecord:
        return self.checkpoints.trigger(self.current)

    def take_over(self, revision: int, switch_at: int) -> None:
        r = self.revisions[revision]
        r.record.switch_at = switch_at
        self.topology, self.plan, self.current = r.topology, r.plan, revision
        self._publish()

    def finish(self, revision: int, status: RevisionStatus, error: str = "") -> None:
        self.revisions.finish(revision, status, error)
        if status is not RevisionStatus.APPLIED:
            self.session.report(f"revision {revision}", error)

    def _run_revision(self, revision: int) -> None:
        """Make ``revision`` the one whose plan this topology master runs."""
        r = self.revisions.running(revision)
        self.topology, self.plan, self.current = r.topology, r.plan, revision

    # -- plan and commands -------------------------------------------------------------
    def physical_plan(self) -> pb.PhysicalPlan | None:
        """The plan containers run, or None while some container has not registered."""
        if len(self.containers) < self.plan.containers:
            return None
        return pb.PhysicalPlan(
            topology=self.topology.name,
            revision=self.plan_version,
            state=self.state,
            epoch=self.epoch,
            containers=[self.containers[c] for c in sorted(self.containers)],
            instances=instance_infos(self.plan),
        )

    def _publish(self) -> None:
        self.plan_version += 1
        plan = self.physical_plan()
        if plan is not None:
            self.broadcast(pb.Command(plan=plan))
            if self.recovery.restoring is not None:  # idempotent: containers done re-ack
                self.broadcast(pb.Command(restore=self.recovery.restoring))

    def container_of(self, component: str) -> int | None:
        """The container of the first task of ``component`` (uplink receivers have one)."""
        for i in self.plan.instances:
            if i.component == component:
                return i.container
        return None

    # -- views (JSON, see _views) ------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        return views.summary(self)

    def revisions_view(self) -> dict[str, Any]:
        return views.revisions(self)

    def checkpoints_view(self) -> dict[str, Any]:
        return views.checkpoints(self)

    def metrics_view(self) -> dict[str, Any]:
        return views.metrics(self)
