"""A container process: one stream manager and the instances placed on it.

It registers with the topology master, receives the physical plan (peer
addresses) and commands, heartbeats metrics, and starts one OS process per
local instance. At-most-once and at-least-once: a dead instance is restarted
alone (with backoff). Exactly-once: a dead instance is reported to the
master, which rolls every container back to the last complete checkpoint;
the container then restarts all its instances, hands each its snapshot from
the checkpoint store, and acknowledges. SIGTERM stops everything in order.

Live edits (exactly-once only): the master sends a revision (package and
plan) with the checkpoint to switch at. The container loads it (refusing it
if the new code does not import), tells each instance what to do at that
barrier, and acknowledges; when that checkpoint commits, it stops the
replaced and removed instances and starts the replacements (restored from
their snapshot of that checkpoint) and the attached ones (empty). A restore
names the revision to run, so a failed edit rolls back like any failure.

Run as ``python -m headwater.common.runtime.container --help``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# gRPC's fork handlers abort a child forked while its threads run; this
# process forks instances (exec follows at once), so turn them off before
# grpc loads.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

import grpc

from .._loader import load_topology
from .._package import unpack_package
from ..api import Reliability, Topology
from ..plan import (
    InstancePlacement,
    PhysicalPlan,
    pack_round_robin,
    plan_to_json,
    restrict,
    validate,
)
from ..state import CheckpointStore, CorruptCheckpointError
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._procs import beat_file, spawn, terminate
from ._rescale import RescaleError, rescale
from ._stmgr import StreamManager

log = logging.getLogger("headwater.container")
HEARTBEAT_S = 1.0
SILENT_AFTER_S = 6.0  # an instance's gateway beats every second: stopped or hung past this
MAX_MESSAGE = 80 << 20  # a revision carries its package (at most 64 MiB)


@dataclass
class Revision:
    """A topology revision this container can run."""

    topology: Topology
    plan: PhysicalPlan
    file: str  # the topology file
    plan_file: str | None  # task ids, for revisions after the first


@dataclass
class PendingSwitch:
    revision: int
    at: int  # the switch checkpoint
    retiring: set[int]  # local tasks that stop after it (replaced or removed)
    # local tasks that start then -> what they start from: "snapshot" (a replacement's own),
    # "empty" (attached) or "handover" (a new parallelism: the old tasks' keys for it)
    starting: dict[int, str]
    rescaled: dict[str, list[int]]  # component -> its old tasks (parallelism changes)


class Container:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.topology = load_topology(args.topology_file, args.topology)
        validate(self.topology)
        self.plan = pack_round_robin(self.topology, args.containers)
        self.id = args.container
        self.workdir = Path(args.workdir)
        self.socket_path = str(self.workdir / f"c{self.id}.sock")
        if len(self.socket_path) > 100:  # AF_UNIX paths stop at 108 bytes
            self.socket_path = os.path.join(tempfile.mkdtemp(prefix="hw-"), f"c{self.id}.sock")
        self.incarnation = time.time_ns()
        self.exceptions: list[dict[str, Any]] = []
        self.stmgr = StreamManager(self.topology, self.plan, self.id, self._on_exception)
        self.revisions = {1: Revision(self.topology, self.plan, args.topology_file, None)}
        self.revision = 1  # the one running (the first: what the container started with)
        self.switch: PendingSwitch | None = None
        self.last_error: dict[int, str] = {}  # task -> its last exception, for failure reports
        self.procs: dict[int, subprocess.Popen[bytes]] = {}
        self.restart_at: dict[int, float] = {}
        self.backoff: dict[int, float] = {}
        self.stopping = asyncio.Event()
        self.stub: pb_grpc.TopologyMasterStub | None = None
        self.exactly_once = self.stmgr.rc.reliability is Reliability.EXACTLY_ONCE
        self.store: CheckpointStore | None = None
        self.restore: pb.Restore | None = None  # the one in progress
        self.snapshots: dict[int, bytes | None] = {}  # task -> blob to hand over
        self.handed: set[int] = set()
        self.starting: set[int] = set()  # the tasks a restore (or a switch) starts
        self.restore_ack = True  # False while starting a switch's new instances
        self.handover: set[int] = set()  # new tasks waiting for their share of the keys
        self.failure_reported = -1  # epoch of the last failure report
        self.background: list[Callable[[], Coroutine[Any, Any, None]]] = []  # extra jobs
        self.log_committed: dict[str, float] = {}  # durable log partition -> offset
        self.stmgr.on_system = self._on_system
        if self.exactly_once:
            self.store = CheckpointStore(args.state_dir)
            self.stmgr.on_state = self._on_state
            self.stmgr.on_hello = self._on_hello

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self.stopping.set)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        await self.stmgr.start_local_server(self.socket_path)
        self.address = await self.stmgr.start_peer_server(self.args.host)
        log.info("container %d: stmgr at %s, ipc %s", self.id, self.address, self.socket_path)
        if not self.exactly_once:  # exactly-once instances start with the first restore
            for task in self.local_tasks:
                self._spawn(task)
        tasks = [
            loop.create_task(self._master_session()),
            loop.create_task(self._supervise()),
            loop.create_task(self._expire()),
            loop.create_task(self._beat()),
            *(loop.create_task(job()) for job in self.background),
        ]
        await self.stopping.wait()
        log.info("container %d stopping", self.id)
        for task in list(self.stmgr.conns):
            self.stmgr.send_control(task, {"type": "stop"})
        await loop.run_in_executor(None, terminate, list(self.procs.values()), 3.0)
        for t in tasks:
            t.cancel()
        await self.stmgr.close()
        if self.store is not None:
            self.store.close()

    @property
    def local_tasks(self) -> list[int]:
        return sorted(i.task_id for i in self.revisions[self.revision].plan.in_container(self.id))

    def _on_exception(self, report: dict[str, Any]) -> None:
        if report.get("type") == "exception":  # a dead letter is no cause of a crash
            self.last_error[int(report["task"])] = f"{report['component']}: {report['message']}"
        self.exceptions.append(report)

    def _spawn(self, task: int) -> None:
        rev = self.revisions[self.revision]
        args = [
            "-m", "headwater.common.runtime.instance",
            "--topology-file", rev.file,
            "--task", str(task),
            "--socket", self.socket_path,
        ]  # fmt: skip
        if self.args.topology:
            args += ["--topology", self.args.topology]
        if rev.plan_file:
            args += ["--plan-file", rev.plan_file]
        self.procs[task] = spawn(args, log_path=str(self.workdir / f"task-{task}.log"))

    async def _supervise(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            now = time.monotonic()
            self._kill_silent()
            for task, proc in list(self.procs.items()):
                if proc.poll() is None or self.stopping.is_set():
                    continue  # running, or stopped on purpose: the container is stopping
                if self.exactly_once:
                    await self._report_failure(task, proc.returncode)
                    continue
                if task not in self.restart_at:
                    delay = self.backoff.get(task, 0.0)
                    self.backoff[task] = min(max(delay * 2, 0.25), 5.0)
                    self.restart_at[task] = now + delay
                    self.stmgr.restarts[task] = self.stmgr.restarts.get(task, 0) + 1
                    log.warning(
                        "task %d exited with %s; restarting in %.2fs", task, proc.returncode, delay
                    )
                    # the master counts it (no rollback in these modes) to name a crash loop
                    asyncio.get_running_loop().create_task(
                        self._send_failure(task, self._failure_reason(task, proc.returncode))
                    )
                elif now >= self.restart_at[task]:
                    del self.restart_at[task]
                    self._spawn(task)
            for task in self.stmgr.conns:  # healthy for a while: reset the backoff
                if self.backoff.get(task) and task not in self.restart_at:
                    self.backoff[task] = max(0.0, self.backoff[task] - 0.01)

    def _kill_silent(self) -> None:
        """Kill an instance whose heartbeats stopped (SIGSTOP, a hang): it is then restarted
        (or rolled back) as a dead one is."""
        for task, silent_s in self.stmgr.silent(SILENT_AFTER_S).items():
            proc = self.procs.get(task)
            if proc is None or proc.poll() is not None:
                continue
            log.warning("task %d (pid %d) silent for %.1fs: stopped or hung; killing it",
                        task, proc.pid, silent_s)  # fmt: skip
            self.last_error[task] = f"silent for {silent_s:.0f}s (stopped or hung): killed"
            proc.kill()
            self.stmgr.conns[task].stale = True  # not silent twice

    async def _report_failure(self, task: int, code: int | None) -> None:
        if self.failure_reported == self.stmgr.epoch or self.stub is None:
            return
        self.failure_reported = self.stmgr.epoch
        self.stmgr.restarts[task] = self.stmgr.restarts.get(task, 0) + 1
        log.warning("task %d exited with %s; asking for a rollback", task, code)
        if not await self._send_failure(task, self._failure_reason(task, code)):
            self.failure_reported = -1  # the master is away: report again later

    def _failure_reason(self, task: int, code: int | None) -> str:
        reason = f"task {task} exited with {code}"
        if task in self.last_error:
            reason += f" ({self.last_error.pop(task)})"
        return reason

    async def _send_failure(self, task: int, reason: str) -> bool:
        """Tell the master that ``task`` died; False if it could not be told."""
        if self.stub is None:
            return False
        try:
            await self.stub.ReportFailure(pb.FailureReport(
                topology=self.topology.name, container=self.id, task_id=task, reason=reason,
            ))  # fmt: skip
        except grpc.RpcError:
            return False
        return True

    async def _beat(self) -> None:
        """Touch the beat file every second: whoever started this process (a worker) tells
        a stopped or hung container from a busy one by it."""
        beat = beat_file(self.workdir, self.id)
        while True:
            try:
                beat.touch()
            except OSError as exc:  # a full disk or a workdir gone: the others report it
                log.debug("beat file not touched: %s", exc)
            await asyncio.sleep(1.0)

    async def _expire(self) -> None:
        interval = self.stmgr.rc.message_timeout_s / 3
        while True:
            await asyncio.sleep(min(interval, 1.0))
            self.stmgr.expire_roots()

    async def _master_session(self) -> None:
        delay = 0.1
        while True:
            try:
                options = [("grpc.max_receive_message_length", MAX_MESSAGE)]
                async with grpc.aio.insecure_channel(self.args.tmaster, options=options) as channel:
                    stub = pb_grpc.TopologyMasterStub(channel)
                    info = pb.ContainerInfo(
                        container=self.id, stmgr_address=self.address, pid=os.getpid(),
                        incarnation=self.incarnation,
                    )  # fmt: skip
                    await stub.Register(
                        pb.RegisterRequest(topology=self.topology.name, container=info)
                    )
                    self.stub = stub
                    hb = asyncio.get_running_loop().create_task(self._heartbeat(stub))
                    try:
                        watch = stub.Watch(
                            pb.WatchRequest(topology=self.topology.name, container=self.id)
                        )
                        delay = 0.1
                        async for command in watch:
                            await self._on_command(command)
                    finally:
                        hb.cancel()
                        self.stub = None
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                log.debug("topology master unreachable: %s", exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    # -- commands ---------------------------------------------------------------
    async def _on_command(self, command: pb.Command) -> None:
        which = command.WhichOneof("command")
        if which == "plan":
            plan = command.plan
            self.stmgr.set_peers({c.container: c.stmgr_address for c in plan.containers})
            if not self.exactly_once or plan.epoch == self.stmgr.epoch:
                self.stmgr.set_active(plan.state == "RUNNING")
        elif which == "checkpoint":
            if command.checkpoint.epoch == self.stmgr.epoch:
                msg = {"type": "checkpoint", "id": command.checkpoint.id}
                for task in list(self.stmgr.conns):
                    if self.stmgr.task_component[task] in self.stmgr.spout_components:
                        self.stmgr.send_control(task, msg)
        elif which == "commit":
            for task in list(self.stmgr.conns):
                self.stmgr.send_control(task, {"type": "commit", "id": command.commit.id})
            if self.switch is not None and self.switch.at == command.commit.id:
                await self._switch()
            if self.store is not None:
                self.store.prune(command.commit.keep_from)
        elif which == "restore":
            await self._restore(command.restore)
        elif which == "revision":
            await self._on_revision(command.revision)
        elif which == "switch" and not command.switch.commit:
            self._abort_switch(command.switch.revision)
        elif which == "handover":
            await self._on_handover(command.handover)

    # -- live edits -----------------------------------------------------------------
    def _stage(self, r: pb.Revision) -> Revision:
        """Unpack and load revision ``r`` (once); raise if its code does not load."""
        known = self.revisions.get(r.revision)
        if known is not None:
            return known
        home = self.workdir / f"rev-{r.revision}"
        code = unpack_package(r.package_data, r.package, home / "code")
        plan = PhysicalPlan(
            self.topology.name,
            self.plan.containers,
            tuple(InstancePlacement(i.task_id, i.component, i.component_index, i.container)
                  for i in r.plan.instances),
        )  # fmt: skip
        topology = restrict(load_topology(code / r.entry, self.args.topology), plan)
        validate(topology)
        plan_file = home / "plan.json"
        plan_file.write_text(plan_to_json(plan))
        rev = Revision(topology, plan, str(code / r.entry), str(plan_file))
        self.revisions[r.revision] = rev
        return rev

    async def _on_revision(self, r: pb.Revision) -> None:
        try:
            new = self._stage(r)
        except Exception as exc:  # the new code fails to load: the edit is refused
            log.warning("revision %d cannot be loaded: %s", r.revision, exc)
            await self._ack_switch(r.revision, ok=False, error=f"container {self.id}: {exc}")
            return
        if not r.switch_at:
            return
        old = {i.task_id for i in self.revisions[self.revision].plan.instances}
        replaced = set(r.replaced)
        new_tasks = {i.task_id: i.component for i in new.plan.instances}
        # old tasks stop if replaced or removed; new ones start, restored if replacements
        retiring = {t for t in self.local_tasks
                    if t not in new_tasks or new_tasks[t] in replaced}  # fmt: skip
        old_ids, new_ids = self.revisions[self.revision].plan.ids(), new.plan.ids()
        rescaled = {c: old_ids[c] for c in replaced if old_ids.get(c) != new_ids.get(c)}
        starting = {
            i.task_id: "handover" if i.component in rescaled
            else "snapshot" if i.task_id in old else "empty"
            for i in new.plan.in_container(self.id)
            if i.component in replaced or i.task_id not in old
        }  # fmt: skip
        for task in self.local_tasks:
            if task in retiring:
                self.stmgr.send_control(task, {"type": "prepare", "at": r.switch_at,
                                               "retire": True})  # fmt: skip
            else:
                self.stmgr.send_control(task, {
                    "type": "prepare", "at": r.switch_at, "file": new.file,
                    "plan": new.plan_file, "topology": self.args.topology,
                })  # fmt: skip
        self.stmgr.stage(new.plan, retiring, r.switch_at)
        self.switch = PendingSwitch(r.revision, r.switch_at, retiring, starting, rescaled)
        log.info("revision %d staged: switch at checkpoint %d (%d tasks retire, %d start here)",
                 r.revision, r.switch_at, len(retiring), len(starting))  # fmt: skip
        await self._ack_switch(r.revision, ok=True)

    def _abort_switch(self, revision: int) -> None:
        if self.switch is None or self.switch.revision != revision:
            return
        self.switch = None
        for task in self.local_tasks:
            self.stmgr.send_control(task, {"type": "abort"})
        self.stmgr.retiring = {}
        rev = self.revisions[self.revision]
        self.stmgr.set_plan(rev.topology, rev.plan)
        log.info("revision %d abandoned", revision)

    async def _switch(self) -> None:
        """The switch checkpoint committed: the old instances go, the new ones start."""
        sw = self.switch
        assert sw is not None and self.store is not None
        self.switch = None
        procs = [self.procs.pop(t) for t in sw.retiring if t in self.procs]
        # each stops by itself once it has published the commit; a slow one is made to
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, terminate, procs, 5.0)
        for task in sw.retiring:
            self.stmgr.retire(task)
        self.revision = sw.revision
        rev = self.revisions[sw.revision]
        self.stmgr.set_plan(rev.topology, rev.plan)
        for component, tasks in sw.rescaled.items():  # their state goes to the new tasks
            for task in tasks:
                if task in sw.retiring:
                    await self._put_state(sw, component, task)
        self.snapshots = {
            t: self.store.load(sw.at, t) if start == "snapshot" else None
            for t, start in sw.starting.items()
        }
        self.restore = pb.Restore(checkpoint_id=sw.at, epoch=self.stmgr.epoch, revision=sw.revision)
        self.handed, self.restore_ack = set(), False
        self.starting = set(sw.starting)
        self.handover = {t for t, start in sw.starting.items() if start == "handover"}
        for task in sw.starting:
            if task not in self.handover:  # those wait for their keys
                self._spawn(task)
        if not sw.starting:
            self.restore = None
            await self._ack_switch(sw.revision, ok=True)
        log.info("revision %d runs here: %d tasks retired, %d started", sw.revision,
                 len(sw.retiring), len(sw.starting))  # fmt: skip

    async def _put_state(self, sw: PendingSwitch, component: str, task: int) -> None:
        assert self.store is not None and self.stub is not None
        blob = self.store.load(sw.at, task) or b""
        try:
            await self.stub.PutState(pb.StateTransfer(
                topology=self.topology.name, revision=sw.revision, component=component,
                task_id=task, checkpoint_id=sw.at, blob=blob,
            ))  # fmt: skip
        except grpc.RpcError as exc:
            log.warning("the state of task %d did not reach the master: %s", task, exc)

    async def _on_handover(self, h: pb.StateHandover) -> None:
        """A rescaled component's old snapshots: each new task here keeps its keys, then starts."""
        rev = self.revisions.get(h.revision)
        if rev is None or h.revision != self.revision:
            return
        mine = [i for i in rev.plan.in_container(self.id)
                if i.component == h.component and i.task_id in self.handover]  # fmt: skip
        blobs = [p.blob or None for p in h.parts]
        n = len(rev.plan.tasks(h.component))
        try:
            for i in mine:
                self.snapshots[i.task_id] = rescale(h.component, blobs, i.index, n)
        except RescaleError as exc:
            log.warning("%s", exc)
            if self.stub is not None:
                await self.stub.ReportFailure(pb.FailureReport(
                    topology=self.topology.name, container=self.id, reason=str(exc),
                ))  # fmt: skip
            return
        for i in mine:
            self.handover.discard(i.task_id)
            self._spawn(i.task_id)

    async def _ack_switch(self, revision: int, ok: bool, error: str = "") -> None:
        if self.stub is None:
            return
        try:
            await self.stub.AckSwitch(pb.SwitchAck(
                topology=self.topology.name, container=self.id, revision=revision, ok=ok,
                error=error,
            ))  # fmt: skip
        except grpc.RpcError as exc:
            log.debug("switch ack not delivered: %s", exc)

    def _on_system(self, msg: dict[str, Any]) -> None:
        if msg.get("type") == "log_committed":  # for the agent's ingest log retention
            for p, offset in msg["offsets"].items():
                self.log_committed[f"log_committed:{msg['path']}#p{p}"] = float(offset)
            return
        log.warning("ignoring an unknown control message %r", msg.get("type"))

    async def _restore(self, restore: pb.Restore) -> None:
        if restore.epoch <= self.stmgr.epoch:
            if restore.epoch == self.stmgr.epoch and self.restore is None:
                await self._ack_restore(restore, ok=True)  # a repeated order: already done
            return  # an old order, or this one still in progress (it acks when done)
        log.info("epoch %d: restoring checkpoint %d under revision %d", restore.epoch,
                 restore.checkpoint_id, restore.revision)  # fmt: skip
        revision = restore.revision or 1  # an edge domain's master has no revisions
        if revision not in self.revisions:
            log.error("asked to restore revision %d, which was never sent here", revision)
            return
        if self.switch is not None:
            self.switch = None
            for task in self.local_tasks:
                self.stmgr.send_control(task, {"type": "abort"})
        self.revision = revision
        rev = self.revisions[revision]
        self.stmgr.set_plan(rev.topology, rev.plan)
        procs = list(self.procs.values())
        self.procs.clear()
        for p in procs:
            if p.poll() is None:
                p.kill()
        self.stmgr.reset(restore.epoch)
        await asyncio.get_running_loop().run_in_executor(None, terminate, procs, 1.0)
        assert self.store is not None
        snapshots: dict[int, bytes | None] = {}
        try:
            for task in self.local_tasks:
                snapshots[task] = (
                    self.store.load(restore.checkpoint_id, task) if restore.checkpoint_id else None
                )
        except CorruptCheckpointError as exc:
            log.warning("%s", exc)
            self.restore = None
            await self._ack_restore(restore, ok=False, error=str(exc))
            return
        if not self.local_tasks:
            # an empty container (more containers than instances, or an edit that moved
            # everything away) has nothing to restore: waiting for an instance's hello
            # here kept the whole domain RESTORING forever
            await self._ack_restore(restore, ok=True)
            return
        self.restore, self.snapshots, self.handed = restore, snapshots, set()
        self.starting, self.restore_ack = set(self.local_tasks), True
        for task in self.local_tasks:
            self._spawn(task)

    def _on_hello(self, task: int) -> None:
        r = self.restore
        if r is None or task not in self.snapshots:
            return
        self.stmgr.send_control(
            task, {"type": "restore", "checkpoint": r.checkpoint_id, "blob": self.snapshots[task]}
        )
        self.handed.add(task)
        if self.handed >= self.starting:
            self.restore = None
            self.snapshots = {}
            if self.restore_ack:
                asyncio.get_running_loop().create_task(self._ack_restore(r, ok=True))
            else:  # a switch's new instances are up
                asyncio.get_running_loop().create_task(self._ack_switch(r.revision, ok=True))

    async def _ack_restore(self, r: pb.Restore, ok: bool, error: str = "") -> None:
        if self.stub is None:
            return
        try:
            await self.stub.AckRestore(pb.RestoreAck(
                topology=self.topology.name, container=self.id, epoch=r.epoch,
                checkpoint_id=r.checkpoint_id, ok=ok, error=error,
            ))  # fmt: skip
        except grpc.RpcError as exc:
            log.debug("restore ack not delivered: %s", exc)

    def _on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        assert self.store is not None
        try:
            size = self.store.save(checkpoint, task, blob)
        except Exception as exc:  # rocksdict raises its own errors (a full disk, most likely)
            # not acknowledged: the checkpoint fails and the master says so; RocksDB keeps a
            # write error until it is reopened, so reopen it for the next checkpoint
            log.error("the snapshot of task %d for checkpoint %d was not saved: %s",
                      task, checkpoint, exc)  # fmt: skip
            self._reopen_store()
            if self.stub is not None:
                asyncio.get_running_loop().create_task(
                    self._ack_checkpoint(task, checkpoint, 0, declined=str(exc) or repr(exc))
                )
            return
        if self.stub is not None:
            asyncio.get_running_loop().create_task(self._ack_checkpoint(task, checkpoint, size))

    def _reopen_store(self) -> None:
        assert self.store is not None
        with contextlib.suppress(Exception):  # closed already, by a reopen that failed
            self.store.close()
        try:
            self.store = CheckpointStore(self.args.state_dir)
        except Exception as exc:  # still no room: the next snapshot tries again
            log.warning("cannot reopen the checkpoint store: %s", exc)

    async def _ack_checkpoint(self, task: int, checkpoint: int, size: int,
                              declined: str = "") -> None:  # fmt: skip
        if self.stub is None:
            return
        try:
            await self.stub.AckCheckpoint(pb.CheckpointAck(
                topology=self.topology.name, container=self.id, task_id=task,
                checkpoint_id=checkpoint, epoch=self.stmgr.epoch, size_bytes=size,
                declined=declined,
            ))  # fmt: skip
        except grpc.RpcError as exc:
            log.debug("checkpoint ack not delivered: %s", exc)

    async def _heartbeat(self, stub: pb_grpc.TopologyMasterStub) -> None:
        while True:
            metrics = [pb.Metric(scope=s, name=n, value=v) for s, n, v in self.stmgr.metrics()]
            metrics.append(pb.Metric(scope=f"container:{self.id}", name="pid", value=os.getpid()))
            metrics.append(
                pb.Metric(scope=f"container:{self.id}", name="epoch", value=self.stmgr.epoch)
            )
            for task, proc in self.procs.items():
                metrics.append(pb.Metric(scope=f"task:{task}", name="pid", value=proc.pid))
            for name, offset in self.log_committed.items():
                metrics.append(pb.Metric(scope=f"container:{self.id}", name=name, value=offset))
            reports, self.exceptions[:] = list(self.exceptions), []
            try:
                await stub.SendHeartbeat(pb.Heartbeat(
                    topology=self.topology.name, container=self.id,
                    incarnation=self.incarnation, metrics=metrics,
                    exceptions=[pb.ExceptionReport(
                        task_id=r["task"], component=r["component"], message=r["message"],
                        traceback=r["traceback"], time_ms=int(time.time() * 1000),
                    ) for r in reports],
                ))  # fmt: skip
            except grpc.RpcError as exc:  # beat on: a silent container gets killed
                log.debug("heartbeat not delivered: %s", exc)
                self.exceptions[:0] = reports  # sent with the next one (the last 200)
                del self.exceptions[:-200]
            await asyncio.sleep(HEARTBEAT_S)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="headwater-container")
    p.add_argument("--topology-file", required=True)
    p.add_argument("--topology", default=None)
    p.add_argument("--container", type=int, required=True)
    p.add_argument("--containers", type=int, required=True)
    p.add_argument("--tmaster", required=True, help="host:port of the topology master")
    p.add_argument("--workdir", required=True)
    p.add_argument("--state-dir", required=True, help="where this container's checkpoints live")
    p.add_argument("--host", default="127.0.0.1")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s %(levelname)s container={args.container} %(name)s: %(message)s",
    )
    asyncio.run(Container(args).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
