"""A container process: one stream manager and the instances placed on it.

It registers with the topology master, receives the physical plan (peer
addresses) and commands, heartbeats metrics, and starts one OS process per
local instance. At-most-once and at-least-once: a dead instance is restarted
alone (with backoff). Exactly-once: a dead instance is reported to the
master, which rolls every container back to the last complete checkpoint;
the container then restarts all its instances, hands each its snapshot from
the checkpoint store, and acknowledges. SIGTERM stops everything in order.
With ``--footprint small`` (an agent's edge container on a small device) the
instances are threads of this process instead (``_threads.InstanceThread``),
and where one would be killed this whole process exits (``_kill``).

``Container`` composes one part per concern and is the stream manager's
``StreamManagerHooks``:

- ``Supervisor`` (``_supervisor``): the instance processes, restarts, silent ones;
- ``MasterSession`` (``_session``): register, watch, heartbeat; each command kind
  goes to its handler in the table ``Container._commands`` builds;
- ``Telemetry`` (``_telemetry``): what each heartbeat carries;
- ``LoadedRevisions`` (``_loaded_revisions``): the topology revisions this container can run;
- ``Snapshots`` (``_snapshots``, exactly-once): the checkpoint store, restores,
  snapshots handed to instances on hello;
- ``EditSwitch`` (``_switch``, exactly-once): live edits (stage, switch, abort,
  a rescaled component's keys);

Run as ``python -m headwater.common.runtime.container --help``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Coroutine
from typing import Any

from .._clock import SYSTEM_CLOCK, Clock
from ..api import Reliability
from ..plan import domain_args, pack_round_robin, validate
from ..state._plain import refuse_code
from ..wire._control import (
    Commit,
    ControlMessage,
    DeadLetterReport,
    ExceptionReport,
    LogCommitted,
    Stop,
    TakeCheckpoint,
)
from ..wire.proto import runtime_pb2 as pb
from ._container_config import ContainerConfig, checkpoint_store, parse_config
from ._forkserver import ForkServer
from ._hooks import Metric
from ._loaded_revisions import LoadedRevisions, Revision, topology_loader
from ._procs import Proc, beat_file, spawn, terminate
from ._session import CommandHandler, MasterSession
from ._snapshots import Snapshots
from ._stmgr import StreamManager
from ._supervisor import Supervisor
from ._switch import EditSwitch
from ._telemetry import Telemetry
from ._threads import InstanceThread
from .instance import AGENT_ID_ENV, LABELS_ENV, TOPOLOGY_FILE_ENV

log = logging.getLogger("headwater.container")
KILLED_EXIT = 75
"""A small-footprint container's exit status when one of its tasks was to be killed."""


class Container:
    def __init__(
        self, config: ContainerConfig, clock: Clock = SYSTEM_CLOCK, *, hosted: bool = False
    ) -> None:
        self.config = config
        self.hosted = hosted  # run on its node's own event loop (an agent's --footprint single)
        self.id = config.container
        # --fork-instances: a server that imports an instance once, to fork each from, started
        # first to import while this process loads (``_forkserver``); not for another user's
        forks = config.fork_instances and config.footprint == "normal" and config.run_as is None
        self.forks = ForkServer.start() if forks else None
        # run as the topology's user, this process (the node's identity) never runs its code
        self._load = topology_loader(config.run_as)
        self.topology = self._load(
            config.topology_file, config.topology, config.domain, config.labels
        )
        validate(self.topology)
        self.plan = pack_round_robin(self.topology, config.containers)
        self.workdir = config.workdir
        if config.run_as is not None:  # its code runs as another user; this process is the node's
            refuse_code()  # it reads its instances' snapshots: plain values, never code
            os.makedirs(config.state_dir, mode=0o700, exist_ok=True)
            os.chmod(config.state_dir, 0o700)
        self.socket_path = str(self.workdir / f"c{self.id}.sock")
        if len(self.socket_path) > 100:  # AF_UNIX paths stop at 108 bytes
            folder = tempfile.mkdtemp(prefix="hw-")
            os.chmod(folder, 0o711)  # its instances may run as another user
            self.socket_path = os.path.join(folder, f"c{self.id}.sock")
        self.incarnation = time.time_ns()
        self.stmgr = StreamManager(
            self.topology, self.plan, self.id, self, transport=config.transport
        )
        self.exactly_once = self.stmgr.rc.reliability is Reliability.EXACTLY_ONCE
        first = Revision(self.topology, self.plan, config.topology_file, None)
        self.revisions = LoadedRevisions(
            first,
            self.id,
            self.workdir,
            config.topology,
            self.stmgr,
            config.domain,
            config.labels,
            self._load,
        )
        self.supervisor = Supervisor(
            self._launch, self.stmgr, restart=not self.exactly_once, clock=clock
        )
        self.telemetry = Telemetry(
            self.topology.name, self.id, self.incarnation, self.stmgr, self.supervisor.pids, clock
        )
        self.session = MasterSession(
            config.tmaster,
            self.topology.name,
            self.id,
            self.incarnation,
            self.telemetry,
            transport=config.transport,
            server_name=config.tmaster_name,
            address_file=config.tmaster_file,
        )
        self.recovery: Snapshots | None = None
        self.switch: EditSwitch | None = None
        if self.exactly_once:
            self.recovery = Snapshots(
                checkpoint_store(config, self.topology.name),
                self.stmgr,
                self.supervisor,
                self.revisions,
                self.session,
                self._forget_switch,
            )
            self.switch = EditSwitch(
                self.id, self.stmgr, self.revisions, self.supervisor, self.recovery, self.session
            )
        self.session.handlers = self._commands()
        self.failure_reported = -1  # epoch of the last failure report
        self.stopping = asyncio.Event()
        self.background: list[Callable[[], Coroutine[Any, Any, None]]] = []  # extra jobs

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        if not self.hosted:  # hosted, its node has the signals and stops it
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stopping.set)
        if os.path.exists(self.socket_path):
            os.unlink(self.socket_path)
        await self.stmgr.start_local_server(self.socket_path)
        if self.config.run_as is not None:  # its instances' user, and no one else, connects
            os.chown(self.socket_path, self.config.run_as.uid, self.config.run_as.gid)
            os.chmod(self.socket_path, 0o600)
        address = await self.stmgr.start_peer_server(self.config.host)
        log.info("container %d: stmgr at %s, ipc %s", self.id, address, self.socket_path)
        if not self.exactly_once:  # exactly-once instances start with the first restore
            for task in self.local_tasks:
                self.supervisor.start(task)
        tasks = [
            loop.create_task(self.session.run(address)),
            loop.create_task(self._supervise()),
            loop.create_task(self._expire()),
            loop.create_task(self._beat()),
            *(loop.create_task(job()) for job in self.background),
        ]
        await self.stopping.wait()
        log.info("container %d stopping", self.id)
        for task in list(self.stmgr.conns):
            self.stmgr.send_control(task, Stop())
        await loop.run_in_executor(None, terminate, list(self.supervisor.procs.values()), 3.0)
        for t in tasks:
            t.cancel()
        await self.stmgr.close()
        if self.recovery is not None:
            self.recovery.close()

    @property
    def local_tasks(self) -> list[int]:
        return self.revisions.local_tasks

    def _launch(self, task: int) -> Proc:
        rev = self.revisions.running
        if self.config.footprint == "small":
            plan = rev.plan if rev.plan_file else None  # as the instance process reads it
            # what a component reads at open (live_model), as an instance process has it
            # (each thread has its own too: hosted, this environment is every container's)
            labels = json.dumps(self.config.labels, sort_keys=True)
            agent = os.environ.get(AGENT_ID_ENV, "")  # an edge container's (its agent's id)
            package = (os.path.abspath(rev.file), labels, agent)
            os.environ[TOPOLOGY_FILE_ENV], os.environ[LABELS_ENV] = package[:2]
            return InstanceThread(
                task, self.socket_path, lambda: (rev.topology, plan), self._kill, package
            )
        args = [
            "-m",
            "headwater.common.runtime.instance",
            "--topology-file",
            rev.file,
            "--task",
            str(task),
            "--socket",
            self.socket_path,
        ]
        if self.config.topology:
            args += ["--topology", self.config.topology]
        if rev.plan_file:
            args += ["--plan-file", rev.plan_file]
        args += domain_args(self.config.domain, self.config.labels)
        log_path = str(self.workdir / f"task-{task}.log")
        if self.forks is not None and self.forks.alive:  # a fork of an imported instance
            with contextlib.suppress(OSError):  # gone meanwhile: a new interpreter, as before
                return self.forks.launch(args[2:], log_path)
        return spawn(args, log_path=log_path, run_as=self.config.run_as)

    def _kill(self, thread: InstanceThread) -> None:
        """The small footprint: a task on a thread is to be killed (a rollback's restore, a
        silent one), and no thread can be. End this whole process at once, as a kill of
        the container would: its node restarts it, and every task restores. Hosted in its
        node's process (which must go on), abandon the thread instead."""
        if self.hosted:
            log.warning("task %d is to be killed: cutting its thread off", thread.task)
            thread.abandon()
            return
        if self.stopping.is_set():
            return  # stopping anyway: a thread that did not stop ends with the process
        log.error(
            "task %d is to be killed, and it runs on a thread (--footprint small): "
            "container %d exits for its node to restart it; every task restores",
            thread.task,
            self.id,
        )
        logging.shutdown()
        os._exit(KILLED_EXIT)

    # -- supervision ----------------------------------------------------------------
    async def _supervise(self) -> None:
        while True:
            await asyncio.sleep(0.1)
            if self.stopping.is_set():
                continue  # the instances are stopped on purpose
            for task, code in self.supervisor.check():
                if self.exactly_once:
                    await self._ask_rollback(task, code)
                else:  # the master counts it (no rollback in these modes) to name a crash loop
                    reason = self.supervisor.failure_reason(task, code)
                    asyncio.get_running_loop().create_task(
                        self.session.report_failure(reason, task)
                    )

    async def _ask_rollback(self, task: int, code: int | None) -> None:
        if self.failure_reported == self.stmgr.epoch or self.session.stub is None:
            return
        self.failure_reported = self.stmgr.epoch
        self.stmgr.restarts[task] = self.stmgr.restarts.get(task, 0) + 1
        log.warning("task %d exited with %s; asking for a rollback", task, code)
        if not await self.session.report_failure(self.supervisor.failure_reason(task, code), task):
            self.failure_reported = -1  # the master is away: report again later

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

    # -- commands -------------------------------------------------------------------
    def _commands(self) -> dict[str, CommandHandler]:
        """The topology master's commands: the ``Command`` oneof's name -> its handler."""
        table: dict[str, CommandHandler] = {
            "plan": self._on_plan,
            "checkpoint": self._on_checkpoint,
            "commit": self._on_commit,
            "restart_tasks": self._on_restart,
        }
        recovery, switch = self.recovery, self.switch
        if recovery is not None and switch is not None:  # exactly-once only

            async def restore(c: pb.Command) -> None:
                await recovery.restore(c.restore)

            async def revision(c: pb.Command) -> None:
                await switch.on_revision(c.revision)

            async def abort(c: pb.Command) -> None:
                if not c.switch.commit:
                    switch.abort(c.switch.revision)

            async def handover(c: pb.Command) -> None:
                await switch.on_handover(c.handover)

            table |= {
                "restore": restore,
                "revision": revision,
                "switch": abort,
                "handover": handover,
            }
        return table

    async def _on_restart(self, command: pb.Command) -> None:
        r = command.restart_tasks
        self.supervisor.kill(r.tasks, r.reason or "asked by the topology master")

    async def _on_plan(self, command: pb.Command) -> None:
        plan = command.plan
        self.stmgr.set_peers({c.container: c.stmgr_address for c in plan.containers})
        if not self.exactly_once or plan.epoch == self.stmgr.epoch:
            self.stmgr.set_active(plan.state == "RUNNING")

    async def _on_checkpoint(self, command: pb.Command) -> None:
        if command.checkpoint.epoch != self.stmgr.epoch:
            return
        msg = TakeCheckpoint(id=command.checkpoint.id)
        for task in list(self.stmgr.conns):
            if self.stmgr.task_component[task] in self.stmgr.spout_components:
                self.stmgr.send_control(task, msg)

    async def _on_commit(self, command: pb.Command) -> None:
        for task in list(self.stmgr.conns):
            self.stmgr.send_control(task, Commit(id=command.commit.id))
        if self.switch is not None:
            await self.switch.on_commit(command.commit.id)
        if self.recovery is not None:
            self.recovery.prune(command.commit.keep_from)

    def _forget_switch(self) -> None:
        if self.switch is not None:
            self.switch.restored()

    # -- StreamManagerHooks ------------------------------------------------------------
    def on_hello(self, task: int) -> None:
        if self.recovery is not None:
            self.recovery.on_hello(task)

    def on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        if self.recovery is not None:
            self.recovery.on_state(task, checkpoint, blob)

    def on_report(self, report: ExceptionReport | DeadLetterReport) -> None:
        if isinstance(report, ExceptionReport):  # a dead letter is no cause of a crash
            self.supervisor.last_error[report.task] = f"{report.component}: {report.message}"
        self.telemetry.add_report(report)

    def on_system(self, msg: ControlMessage) -> None:
        if isinstance(msg, LogCommitted):  # for the agent's ingest log retention
            self.telemetry.note_log_committed(msg)
        else:
            log.warning("ignoring an unexpected control message %r", msg.TYPE)

    def on_outbox(self, task: int, component: str, seq: int, rows: bytes) -> bool:
        return False  # no uplink here (an edge container has one)

    def extra_metrics(self) -> list[Metric]:
        return []


def main(argv: list[str] | None = None) -> int:
    config = parse_config(argv)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s %(levelname)s container={config.container} %(name)s: %(message)s",
    )
    asyncio.run(Container(config).run())
    return 0


if __name__ == "__main__":
    sys.exit(main())
