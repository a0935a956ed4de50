"""The topology master: physical plan, registration, heartbeats, checkpoints, recovery.

Containers register with their stmgr address; once all have, the master
publishes the physical plan (with every address) to every watcher, and again
whenever a container re-registers (a restart moves its address).

Exactly-once topologies add the checkpoint coordinator (Chandy-Lamport
barriers, as in Heron and Flink): every interval the master orders the spouts
to snapshot and inject markers for checkpoint N; each instance snapshots when
markers from all its inputs have arrived and acknowledges; N is complete when
every instance has, and the master then tells transactional sinks to publish.
Any failure (a lost instance, a restarted container, a restarted master)
opens a new epoch: every container restarts its instances from the last
complete checkpoint and acknowledges; only then do the spouts resume. A
snapshot that fails its checksum marks its checkpoint corrupt, and the
restore falls back to the one before.

Live edits (exactly-once topologies): a proposed revision waits until no
checkpoint is in flight, then goes to every container, which loads it and
says so; the next checkpoint is the switch. Once it is complete, the
master runs the new plan and the containers swap (see the container); the
edit is applied when the first checkpoint taken by the new revision
completes. A failure before that (the new code failing to start, say) rolls
back like any other, to the switch checkpoint, which the previous revision
took, so the previous revision runs again. Every checkpoint records the
revision that took it, and a restore runs that revision.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from .._health import Health
from ..api import Reliability, RuntimeConfig, Topology
from ..api._config import CHECKPOINT_INTERVAL_SECS
from ..plan import PhysicalPlan, plan_from_json, revise_plan
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._catalogue import Catalogue, CheckpointRecord, check_same_topology
from ._crashloop import DEFAULT_POLICY, CrashLoopPolicy
from ._revisions import EditError, RevisionLog, RevisionRecord, StaleRevisionError, first_record
from ._watchdog import Watchdog

log = logging.getLogger("headwater.tmaster")
OFFLINE_AFTER_S = 5.0
CHECKPOINT_TIMEOUT_S = 60.0
RESTORE_BURST = 3  # rollbacks in a row that go out at once
RESTORE_WINDOW_S = 30.0
RESTORE_MAX_DELAY_S = 30.0
PREPARE_TIMEOUT_S = 30.0

# (revision record) -> (the revision's topology for this domain, its package bytes)
RevisionLoader = Callable[[RevisionRecord], tuple[Topology, bytes]]


@dataclass
class _Revision:
    topology: Topology
    plan: PhysicalPlan
    record: RevisionRecord
    data: bytes  # its package (empty for the first revision: containers start with it)


@dataclass
class _Edit:
    revision: int
    replaced: tuple[str, ...]
    phase: str = "waiting"  # waiting, preparing, switching, activating
    at: int = 0  # the switch checkpoint
    acks: frozenset[int] = frozenset()
    deadline: float = 0.0
    # components whose parallelism changes -> their old task ids; the old tasks'
    # snapshots of the switch checkpoint, collected for the new tasks
    rescaled: dict[str, list[int]] = field(default_factory=dict)
    parts: dict[str, dict[int, pb.StateTransfer]] = field(default_factory=dict)


class TopologyMaster(pb_grpc.TopologyMasterServicer):
    def __init__(
        self,
        topology: Topology,
        plan: PhysicalPlan,
        state_dir: Path,
        package: str = "",
        entry: str = "",
        load_revision: RevisionLoader | None = None,
        *,
        health: Health | None = None,
        crash_loop: CrashLoopPolicy = DEFAULT_POLICY,
    ) -> None:
        """``health``: the hosting node's, which then shows this topology's crash loops,
        failing checkpoints and a stuck restore (an agent passes its own)."""
        self.topology = topology
        self.plan = plan
        rc = RuntimeConfig.from_mapping(topology.config)
        self.exactly_once = rc.reliability is Reliability.EXACTLY_ONCE
        self.interval_s = float(topology.config.get(CHECKPOINT_INTERVAL_SECS, 3.0))
        state_dir.mkdir(parents=True, exist_ok=True)
        check_same_topology(state_dir / "topology.json", topology, plan)
        self.catalogue = Catalogue(state_dir / "catalogue.json")
        self.user_state = "RUNNING"  # what activate/deactivate asked for
        self.plan_version = 0  # grows with every plan sent to the containers
        self.revlog = RevisionLog(state_dir / "revisions.json")
        if not self.revlog.records:
            self.revlog.add(first_record(package, entry, plan.to_dict()))
        self.revisions = {1: _Revision(topology, plan, self.revlog.records[0], b"")}
        self.load_revision = load_revision
        self.current = 1  # the revision running
        self.edit: _Edit | None = None
        self.started = time.time()
        self.containers: dict[int, pb.ContainerInfo] = {}
        self.last_heartbeat: dict[int, float] = {}
        self.metrics: dict[str, dict[str, float]] = {}
        self.exceptions: deque[dict[str, Any]] = deque(maxlen=200)
        self._watchers: set[asyncio.Queue[pb.Command]] = set()
        self._watch_of: dict[int, asyncio.Queue[pb.Command]] = {}  # container -> its stream
        # recovery: every start of the master is a new epoch (it cannot know
        # what was in flight), restored from the last complete checkpoint
        self.restoring: pb.Restore | None = None
        self.restored: set[int] = set()
        self.in_flight: CheckpointRecord | None = None
        self.recoveries = 0
        self._rollbacks: list[float] = []  # when the recent rollbacks began
        self._restore_at = 0.0  # a held rollback goes out then (0: none held)
        self._last_checkpoint = time.monotonic()
        if self.exactly_once:
            self.catalogue.epoch += 1
            self.catalogue.save()
            target = self.catalogue.latest_complete()
            rec = self.catalogue.find(target)
            self._run_revision(rec.revision if rec is not None else 1)
            self.restoring = pb.Restore(
                checkpoint_id=target, epoch=self.catalogue.epoch, revision=self.current
            )
        self.watchdog = Watchdog(self, policy=crash_loop, health=health)

    @property
    def epoch(self) -> int:
        return self.catalogue.epoch

    @property
    def state(self) -> str:
        if self.restoring is not None:
            return "RESTORING"
        return self.user_state

    # -- gRPC ------------------------------------------------------------------
    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.RegisterResponse:
        if request.topology != self.topology.name:
            return pb.RegisterResponse(
                accepted=False, reason=f"this master runs {self.topology.name!r}"
            )
        info = request.container
        old = self.containers.get(info.container)
        self.containers[info.container] = info
        self.last_heartbeat[info.container] = time.monotonic()
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

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.Command]:
        queue: asyncio.Queue[pb.Command] = asyncio.Queue()
        self._watchers.add(queue)
        self._watch_of[request.container] = queue
        try:
            if self.current != 1:  # a container (re)starts with the first revision's code
                yield pb.Command(revision=self._revision_message(self.current))
            current = self.physical_plan()
            if current is not None:
                yield pb.Command(plan=current)
                if self.restoring is not None:
                    yield pb.Command(restore=self.restoring)
            while True:
                yield await queue.get()
        finally:
            self._watchers.discard(queue)
            if self._watch_of.get(request.container) is queue:
                del self._watch_of[request.container]

    async def SendHeartbeat(self, request: pb.Heartbeat, context: Any) -> pb.HeartbeatAck:
        self.last_heartbeat[request.container] = time.monotonic()
        for m in request.metrics:
            self.metrics.setdefault(m.scope, {})[m.name] = m.value
        for e in request.exceptions:
            self.exceptions.append(
                {
                    "task": e.task_id,
                    "component": e.component,
                    "message": e.message,
                    "traceback": e.traceback,
                    "time_ms": e.time_ms,
                }
            )
        return pb.HeartbeatAck(plan_revision=self.plan_version)

    async def AckCheckpoint(self, request: pb.CheckpointAck, context: Any) -> pb.Empty:
        rec = self.in_flight
        if rec is None or request.checkpoint_id != rec.id or request.epoch != self.epoch:
            return pb.Empty()  # late: from a rolled-back epoch or an abandoned checkpoint
        if request.declined:  # as Flink's DeclineCheckpoint: fail it now, the next may do
            log.warning("checkpoint %d failed: task %d could not store its snapshot: %s",
                        rec.id, request.task_id, request.declined)  # fmt: skip
            rec.state = "FAILED"
            self.in_flight = None
            self.catalogue.save()
            return pb.Empty()
        rec.acked.add(request.task_id)
        rec.size_bytes += request.size_bytes
        if len(rec.acked) == len(self.plan.instances):
            rec.state = "COMPLETE"
            rec.duration_ms = (time.monotonic() - rec._t0) * 1000.0
            self.in_flight = None
            if not self.catalogue.save():  # complete only once on disk (a full disk: not)
                rec.state = "FAILED"
                return pb.Empty()
            complete = self.catalogue.complete()
            keep_from = complete[-2].id if len(complete) >= 2 else rec.id
            log.info(
                "checkpoint %d complete in %.0f ms (%d bytes)",
                rec.id,
                rec.duration_ms,
                rec.size_bytes,
            )
            self.broadcast(pb.Command(commit=pb.CheckpointCommit(id=rec.id, keep_from=keep_from)))
            self._on_complete(rec)
        return pb.Empty()

    async def AckRestore(self, request: pb.RestoreAck, context: Any) -> pb.Empty:
        r = self.restoring
        if r is None or request.epoch != r.epoch:
            return pb.Empty()
        if not request.ok:
            log.warning(
                "container %d cannot restore checkpoint %d: %s; falling back to the "
                "previous checkpoint",
                request.container,
                request.checkpoint_id,
                request.error,
            )
            rec = self.catalogue.find(request.checkpoint_id)
            if rec is not None:
                rec.state = "CORRUPT"
            self.exceptions.append(
                {
                    "task": -1,
                    "component": "checkpoint",
                    "message": request.error,
                    "traceback": "",
                    "time_ms": int(time.time() * 1000),
                }
            )
            self.begin_restore(
                f"checkpoint {request.checkpoint_id} unusable", below=request.checkpoint_id
            )
            return pb.Empty()
        self.restored.add(request.container)
        if len(self.restored) == self.plan.containers:
            log.info(
                "epoch %d: every container restored checkpoint %d; resuming",
                r.epoch,
                r.checkpoint_id,
            )
            self.restoring = None
            self._last_checkpoint = time.monotonic()
            self.watchdog.observe()
            self._publish()
        return pb.Empty()

    async def ReportFailure(self, request: pb.FailureReport, context: Any) -> pb.Empty:
        """An instance died (every mode: crash loops are counted) or a container failed."""
        self.watchdog.failed(request.task_id, request.container, request.reason)
        if self.exactly_once:
            self.begin_restore(f"container {request.container}: {request.reason}")
        return pb.Empty()

    async def AckSwitch(self, request: pb.SwitchAck, context: Any) -> pb.Empty:
        e = self.edit
        if e is None or request.revision != e.revision:
            return pb.Empty()
        if e.phase == "activating":  # its new instances are up
            e.acks = e.acks | {request.container}
            return pb.Empty()
        if e.phase != "preparing":
            return pb.Empty()
        if not request.ok:
            self._abort(request.error)
            return pb.Empty()
        e.acks = e.acks | {request.container}
        if len(e.acks) == self.plan.containers and self.in_flight is None:
            e.phase = "switching"
            rec = self._trigger_checkpoint()
            assert rec.id == e.at, (rec.id, e.at)  # nothing else starts checkpoints meanwhile
            log.info("revision %d: every container is ready; switching at checkpoint %d",
                     e.revision, e.at)  # fmt: skip
        return pb.Empty()

    async def PutState(self, request: pb.StateTransfer, context: Any) -> pb.Empty:
        e = self.edit
        if e is None or e.phase != "activating" or request.revision != e.revision:
            return pb.Empty()
        old = e.rescaled.get(request.component)
        if old is None or request.task_id not in old:
            return pb.Empty()
        parts = e.parts.setdefault(request.component, {})
        parts[request.task_id] = request
        if len(parts) == len(old):
            log.info("revision %d: %s's state from %d tasks goes to its new ones",
                     e.revision, request.component, len(old))  # fmt: skip
            self.broadcast(pb.Command(handover=pb.StateHandover(
                revision=e.revision, component=request.component,
                parts=[parts[t] for t in sorted(parts)],
            )))  # fmt: skip
        return pb.Empty()

    # -- live edits ------------------------------------------------------------------
    def propose(self, record: RevisionRecord, topology: Topology, data: bytes, base: int,
                replaced: tuple[str, ...], number: int = 0) -> RevisionRecord:  # fmt: skip
        """Start applying a revision made against ``base``; raise EditError if it cannot be.

        It is numbered next in this master's history, or ``number`` (an agent's edge
        domain takes the numbers of the revisions the master makes).
        """
        if base != self.current:
            raise StaleRevisionError(base, self.current)
        if not self.exactly_once:
            raise EditError(
                "live edits switch at a checkpoint barrier, so they need an exactly-once "
                "topology (topology.reliability.mode: exactly_once)"
            )
        if self.edit is not None:
            raise EditError(
                f"revision {self.edit.revision} is still being applied; wait for it "
                "(`headwater revisions`) and edit again"
            )
        plan = revise_plan(self.plan, topology)
        old_ids, new_ids = self.plan.ids(), plan.ids()
        rescaled = {c: old_ids[c] for c in replaced if old_ids.get(c) != new_ids.get(c)}
        record.revision = number or self.revlog.next_number()
        record.plan = plan.to_dict()
        self.revisions[record.revision] = _Revision(topology, plan, record, data)
        self.revlog.add(record)
        self.edit = _Edit(record.revision, replaced, rescaled=rescaled)
        log.info("revision %d proposed (%s by %s): %s", record.revision, record.action,
                 record.author or "?", record.diff)  # fmt: skip
        return record

    def _revision_message(self, revision: int, switch_at: int = 0,
                          replaced: tuple[str, ...] = ()) -> pb.Revision:  # fmt: skip
        r = self.revisions[revision]
        return pb.Revision(
            revision=revision, package=r.record.package, package_data=r.data,
            entry=r.record.entry, exclude=r.record.exclude,
            plan=pb.PhysicalPlan(topology=self.topology.name, instances=[
                pb.InstanceInfo(task_id=i.task_id, component=i.component,
                                component_index=i.index, container=i.container)
                for i in r.plan.instances
            ]),
            switch_at=switch_at, replaced=list(replaced),
        )  # fmt: skip

    def _run_revision(self, revision: int) -> None:
        """Make ``revision`` the one whose plan this master runs (loading it if need be)."""
        if revision not in self.revisions:
            rec = self.revlog.find(revision)
            if rec is None or self.load_revision is None:
                raise EditError(f"revision {revision} is not known here")
            topology, data = self.load_revision(rec)
            plan = plan_from_json(json.dumps(rec.plan))
            self.revisions[revision] = _Revision(topology, plan, rec, data)
        r = self.revisions[revision]
        self.topology, self.plan, self.current = r.topology, r.plan, revision
        if r.record.status != "applied" and revision != 1:
            r.record.status, r.record.error = "applied", ""
            self.revlog.save()

    def _step_edit(self, now: float) -> None:
        """Move a waiting edit on (called by the coordinator)."""
        e = self.edit
        if e is None:
            return
        if e.phase == "waiting":
            # paused spouts still take their snapshot and send markers, so a paused
            # topology switches too (it is applied once it runs and checkpoints again)
            if self.restoring is None and self.in_flight is None and self.physical_plan():
                e.phase, e.deadline, e.acks = "preparing", now + PREPARE_TIMEOUT_S, frozenset()
                e.at = self.catalogue.next_id
                msg = self._revision_message(e.revision, e.at, e.replaced)
                self.broadcast(pb.Command(revision=msg))
        elif e.phase == "preparing" and now > e.deadline:
            missing = sorted(set(range(self.plan.containers)) - e.acks)
            self._abort(f"containers {missing} did not load the revision in "
                        f"{PREPARE_TIMEOUT_S:.0f}s")  # fmt: skip

    def _abort(self, error: str) -> None:
        e = self.edit
        assert e is not None
        self.edit = None
        self.broadcast(pb.Command(switch=pb.Switch(revision=e.revision, commit=False)))
        self._finish(e.revision, "refused", error)

    def _finish(self, revision: int, status: str, error: str = "") -> None:
        rec = self.revisions[revision].record
        rec.status, rec.error = status, error
        self.revlog.save()
        if status == "applied":
            log.info("revision %d applied", revision)
        else:
            log.warning("revision %d %s: %s", revision, status.replace("_", " "), error)
            self.exceptions.append({"task": -1, "component": f"revision {revision}",
                                    "message": error, "traceback": "",
                                    "time_ms": int(time.time() * 1000)})  # fmt: skip

    def _on_complete(self, rec: CheckpointRecord) -> None:
        e = self.edit
        if e is None:
            return
        if e.phase == "switching" and rec.id == e.at:
            r = self.revisions[e.revision]
            r.record.switch_at = rec.id
            self.topology, self.plan, self.current = r.topology, r.plan, e.revision
            e.phase, e.acks = "activating", frozenset()
            self._publish()
            log.info("checkpoint %d complete: revision %d takes over", rec.id, e.revision)
        elif e.phase == "activating" and rec.revision == e.revision:
            self.edit = None
            self._finish(e.revision, "applied")

    # -- recovery and checkpoints --------------------------------------------------
    def begin_restore(self, reason: str, below: int | None = None) -> None:
        if self.in_flight is not None:
            self.in_flight.state = "FAILED"
            self.in_flight = None
        self.catalogue.epoch += 1
        target = self.catalogue.latest_complete(below=below)
        self.catalogue.save()
        self.recoveries += 1
        log.warning("%s: rolling back to checkpoint %d (epoch %d)", reason, target, self.epoch)
        e = self.edit
        if e is not None:
            self.edit = None
            if e.phase == "preparing":
                self.broadcast(pb.Command(switch=pb.Switch(revision=e.revision, commit=False)))
            self._finish(e.revision, "rolled_back", f"{reason}; revision {e.revision} was "
                         "rolled back and the previous one runs")  # fmt: skip
        rec = self.catalogue.find(target)
        self._run_revision(rec.revision if rec is not None else 1)
        self.restoring = pb.Restore(checkpoint_id=target, epoch=self.epoch, revision=self.current)
        self.restored = set()
        self.watchdog.observe()
        # a failure that comes back at once (code that cannot start) must not spin: after
        # RESTORE_BURST rollbacks within RESTORE_WINDOW_S, each waits twice as long
        now = time.monotonic()
        recent = [t for t in self._rollbacks if now - t < RESTORE_WINDOW_S]
        self._rollbacks = [*recent, now]
        delay = 0.0
        if len(recent) >= RESTORE_BURST:
            delay = min(0.5 * 2 ** (len(recent) - RESTORE_BURST), RESTORE_MAX_DELAY_S)
            log.warning("%d rollbacks in %.0fs: restoring in %.1fs; the cause is under "
                        "/exceptions", len(recent) + 1, RESTORE_WINDOW_S, delay)  # fmt: skip
        if delay:
            self._restore_at = now + delay
        else:
            self._restore_at = 0.0
            self._publish()

    async def run_coordinator(self) -> None:
        """Trigger checkpoints on the interval; time out stuck ones; keep health in step."""
        try:
            await self._coordinate()
        finally:
            self.watchdog.close()

    async def _coordinate(self) -> None:
        next_tick = 0.0
        while True:
            await asyncio.sleep(min(0.1, self.interval_s / 4) if self.exactly_once else 0.5)
            now = time.monotonic()
            if now >= next_tick:
                self.watchdog.tick()
                next_tick = now + 1.0
            if not self.exactly_once:
                continue
            if self._restore_at and now >= self._restore_at:
                self._restore_at = 0.0
                if self.restoring is not None:
                    self._publish()  # a held rollback is due
            self._step_edit(now)
            rec = self.in_flight
            if rec is not None:
                if now - rec._t0 > CHECKPOINT_TIMEOUT_S:
                    log.warning("checkpoint %d timed out", rec.id)
                    rec.state = "FAILED"
                    self.in_flight = None
                    self.catalogue.save()
                continue
            if (
                self.restoring is None
                and self.user_state == "RUNNING"
                and now - self._last_checkpoint >= self.interval_s
                and self.physical_plan() is not None
                and not self._edit_holds_checkpoints()
            ):
                self._trigger_checkpoint()

    def _edit_holds_checkpoints(self) -> bool:
        """No checkpoint while an edit prepares or switches, nor before its instances are up."""
        e = self.edit
        if e is None or e.phase == "waiting":
            return False
        return e.phase != "activating" or len(e.acks) < self.plan.containers

    def _trigger_checkpoint(self) -> CheckpointRecord:
        self._last_checkpoint = time.monotonic()
        rec = self.in_flight = self.catalogue.start(self.epoch, self.current)
        self.broadcast(pb.Command(checkpoint=pb.CheckpointRequest(id=rec.id, epoch=self.epoch)))
        return rec

    # -- plan ------------------------------------------------------------------
    def physical_plan(self) -> pb.PhysicalPlan | None:
        if len(self.containers) < self.plan.containers:
            return None
        return pb.PhysicalPlan(
            topology=self.topology.name,
            revision=self.plan_version,
            state=self.state,
            epoch=self.epoch,
            containers=[self.containers[c] for c in sorted(self.containers)],
            instances=[
                pb.InstanceInfo(
                    task_id=i.task_id,
                    component=i.component,
                    component_index=i.index,
                    container=i.container,
                )
                for i in self.plan.instances
            ],
        )

    def set_state(self, state: str) -> None:
        self.user_state = state
        self.watchdog.observe()
        self._publish()

    def _publish(self) -> None:
        self.plan_version += 1
        plan = self.physical_plan()
        if plan is not None:
            self.broadcast(pb.Command(plan=plan))
            if self.restoring is not None:  # idempotent: containers done with it re-ack
                self.broadcast(pb.Command(restore=self.restoring))

    def broadcast(self, command: pb.Command) -> None:
        for q in self._watchers:
            q.put_nowait(command)

    def send_to(self, container: int, command: pb.Command) -> bool:
        """Queue ``command`` for one container; False when it is not watching."""
        q = self._watch_of.get(container)
        if q is None:
            return False
        q.put_nowait(command)
        return True

    def container_of(self, component: str) -> int | None:
        """The container of the first task of ``component`` (uplink receivers have one)."""
        for i in self.plan.instances:
            if i.component == component:
                return i.container
        return None

    # -- views (JSON) ------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        now = time.monotonic()
        return {
            "name": self.topology.name,
            "state": self.state,
            "revision": self.current,
            "plan_version": self.plan_version,
            "epoch": self.epoch,
            "recoveries": self.recoveries,
            "uptime_s": round(time.time() - self.started, 1),
            "status": self.watchdog.view(),
            "containers": [
                {
                    "container": c,
                    "stmgr": info.stmgr_address,
                    "pid": info.pid,
                    "online": now - self.last_heartbeat.get(c, 0) < OFFLINE_AFTER_S,
                    "heartbeat_s_ago": round(now - self.last_heartbeat.get(c, 0), 1),
                }
                for c, info in sorted(self.containers.items())
            ],
            "components": [
                {
                    "name": c.name,
                    "kind": c.kind,
                    "parallelism": c.parallelism,
                    "inputs": [
                        {"component": i.component, "stream": i.stream, "grouping": str(i.grouping)}
                        for i in c.inputs
                    ],
                    "outputs": [{"stream": s.name, "fields": list(s.fields)} for s in c.outputs],
                }
                for c in self.topology.components
            ],
        }

    def revisions_view(self) -> dict[str, Any]:
        return {
            "current": self.current,
            "applying": self.edit.revision if self.edit is not None else None,
            "revisions": [r.view() for r in self.revlog.records],
        }

    def checkpoints_view(self) -> dict[str, Any]:
        return {
            "exactly_once": self.exactly_once,
            "interval_s": self.interval_s,
            "epoch": self.epoch,
            "latest_complete": self.catalogue.latest_complete(),
            "checkpoints": [c.to_dict() for c in self.catalogue.checkpoints],
        }

    def metrics_view(self) -> dict[str, Any]:
        tasks: dict[str, dict[str, Any]] = {}
        components: dict[str, dict[str, float]] = {}
        for inst in self.plan.instances:
            m = dict(self.metrics.get(f"task:{inst.task_id}", {}))
            m_out = {"component": inst.component, "container": inst.container, **m}
            tasks[str(inst.task_id)] = m_out
            agg = components.setdefault(inst.component, {})
            for k in (
                "emitted",
                "executed",
                "acked",
                "failed",
                "backpressure_ms",
                "restarts",
                "exceptions",
                "serialization_errors",
                "dead_letters",
                "record_retries",
            ):
                agg[k] = agg.get(k, 0.0) + m.get(k, 0.0)
        containers = {
            scope.split(":", 1)[1]: values
            for scope, values in self.metrics.items()
            if scope.startswith("container:")
        }
        return {
            "topology": self.topology.name,
            "status": self.watchdog.view(),
            "components": components,
            "tasks": tasks,
            "containers": containers,
        }


class TopologyDispatch(pb_grpc.TopologyMasterServicer):
    """Routes each container's call to the topology master of its topology, by name."""

    def __init__(self, tms: Mapping[str, TopologyMaster]) -> None:
        self.tms = tms

    async def _tm(self, name: str, context: Any) -> TopologyMaster:
        tm = self.tms.get(name)
        if tm is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no topology named {name!r}")
        assert tm is not None
        return tm

    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.RegisterResponse:
        return await (await self._tm(request.topology, context)).Register(request, context)

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.Command]:
        tm = await self._tm(request.topology, context)
        async for command in tm.Watch(request, context):
            yield command

    async def SendHeartbeat(self, request: pb.Heartbeat, context: Any) -> pb.HeartbeatAck:
        return await (await self._tm(request.topology, context)).SendHeartbeat(request, context)

    async def AckCheckpoint(self, request: pb.CheckpointAck, context: Any) -> pb.Empty:
        return await (await self._tm(request.topology, context)).AckCheckpoint(request, context)

    async def AckRestore(self, request: pb.RestoreAck, context: Any) -> pb.Empty:
        return await (await self._tm(request.topology, context)).AckRestore(request, context)

    async def ReportFailure(self, request: pb.FailureReport, context: Any) -> pb.Empty:
        return await (await self._tm(request.topology, context)).ReportFailure(request, context)

    async def AckSwitch(self, request: pb.SwitchAck, context: Any) -> pb.Empty:
        return await (await self._tm(request.topology, context)).AckSwitch(request, context)

    async def PutState(self, request: pb.StateTransfer, context: Any) -> pb.Empty:
        return await (await self._tm(request.topology, context)).PutState(request, context)
