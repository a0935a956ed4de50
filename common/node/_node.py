"""A node daemon: attaches to the master and runs the containers it is given.

Cloud workers and edge agents are nodes. A node dials the master (it is
never dialled), announces itself, and receives run/stop orders on the
attach stream. For each container it fetches the topology's package by
hash, refuses it unless the bytes hash to that name, unpacks it once, and
starts a container process, which it restarts if it dies (``_containers.py``).
It reports status every few seconds, and reconnects with exponential backoff
and jitter when the master is away; its containers keep running meanwhile
(``_session.py``).
Asked (``SendLogs``), it sends the master the last lines of one of its
containers' logs (``_logs.py``).

A node's id is kept in its workdir, which it locks, and it speaks with the
certificate it enrolled for, which it renews (``_identity.py``): a restart
with the same workdir is the same node, so the master re-sends its orders and
the cloud keeps counting its uplink's sequence numbers.

An order's names become paths in the workdir, so they are checked before
any path is touched: a topology name must be a safe name, a package name
``sha256:<64 hex>`` and an entry a file inside the package; a package is
bounded and checked before it is unpacked (common/_package.py). The list of
revoked nodes the master sends a worker is kept beside its certificate,
where its containers' stream managers read it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import time
from dataclasses import replace
from pathlib import Path

import grpc

from .._exceptions import HeadwaterError, PackageMismatchError, PackageRefusedError
from .._health import FAILED, Health
from .._ids import name_problem
from .._package import digest_problem, entry_problem
from .._retry import RetryPolicy
from .._sandbox import RunAs
from .._unpacked import NO_BYTECODE
from ..control._crashloop import CrashLoopWatch
from ..plan import domain_args
from ..runtime._procs import Proc, spawn
from ..security import JoinToken
from ..security._files import write_private
from ..security._identity import REVOKED_FILE
from ..state._store_args import SharedStore
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._containers import ContainerSupervisor
from ._identity import NodeCredentials, lock_workdir, node_identity
from ._leader import LeaderEpoch
from ._limits import DEFAULT_LIMITS, TopologyGroups, TopologyLimits
from ._packages import Packages
from ._session import MasterSession
from ._spark_jobs import SparkJobRunner
from ._users import TopologyUsers

log = logging.getLogger("headwater.node")
RECONNECT = RetryPolicy()
"""Attaching to the master again: 0.2 s to 10 s, with full jitter."""


class Node:
    def __init__(
        self,
        master: str,
        workdir: str | Path,
        *,
        kind: str = "worker",
        node_id: str | None = None,
        labels: dict[str, str] | None = None,
        version: str = "",
        backoff: RetryPolicy = RECONNECT,
        host: str = "127.0.0.1",
        insecure: bool = False,
        join_token: JoinToken | None = None,
        limits: TopologyLimits = DEFAULT_LIMITS,
        isolation: str = "auto",
        spark_folders: tuple[Path, Path] | None = None,  # --landing, --warehouse
        checkpoint_store: SharedStore | None = None,  # its cloud containers' (None: local)
    ) -> None:
        self.master = master
        self.host = host  # where its containers' stream managers listen, and say they are
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kind = kind
        self.started = time.monotonic()
        self._lock = lock_workdir(self.workdir)
        self.node_id = node_identity(self.workdir, kind, node_id)
        self.limits = TopologyGroups(self.node_id, limits, self.workdir)  # each topology's groups
        self.packages = Packages(self.workdir)  # the packages it runs, checked before each start
        self.code_dir = self.packages.folder
        self.checked_entry = self.packages.checked
        self.users = TopologyUsers(self.workdir, isolation)  # each topology's own user
        self.labels = dict(labels or {})
        self.checkpoint_store = checkpoint_store
        self.version = version
        self.backoff = backoff
        self.containers: dict[tuple[str, int], Proc] = {}
        self.orders: dict[tuple[str, int], pb.RunContainer] = {}
        self.error = ""
        self.stopping = asyncio.Event()
        self.health = Health(self.node_id)
        self.crash_loops = CrashLoopWatch(self.health)  # of the containers restarted here
        self._answering: set[asyncio.Task[None]] = set()  # SendLogs orders being answered
        self.credentials = NodeCredentials(
            self.workdir,
            kind,
            self.node_id,
            lambda: self.session.address(),  # noqa: PLW0108 (the session is made below)
            insecure=insecure,
            join_token=join_token,
        )
        self.tls_dir = self.credentials.tls_dir
        self.transport = self.credentials.transport
        self.join_token = join_token
        self.session = MasterSession(
            self.credentials,
            lambda: self.master,
            self.health,
            backoff,
            self.info,  # what this kind of node says of itself (an agent's own)
            self.status,
            self._obey,
            LeaderEpoch(self.workdir),  # a deposed leader's orders are refused
        )
        self.spark_jobs = SparkJobRunner(self, spark_folders)  # its Spark jobs' drivers
        self.supervisor = ContainerSupervisor(
            self.workdir,
            host,
            self.transport,
            self.containers,
            self.orders,
            self.health,
            self.crash_loops,
            hooks=self,
            restart=self._start,
            code_dir=self.code_dir,
        )

    @property
    def attached(self) -> bool:
        """Whether a session with the master is open (it may still be catching up)."""
        return self.session.stub is not None

    def info(self) -> pb.NodeInfo:
        return pb.NodeInfo(
            node_id=self.node_id,
            kind=self.kind,
            labels=self.labels,
            version=self.version,
            pid=os.getpid(),
            hostname=socket.gethostname(),
            checkpoint_store=self.checkpoint_store.settings.describe()
            if self.checkpoint_store is not None
            else "",
        )

    async def run(self) -> None:
        self.users.check()  # which user its topologies' code runs as: said once, at start
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self.session.run()), loop.create_task(self.supervisor.run())]
        tasks.append(loop.create_task(self.credentials.renewing()))
        tasks.append(loop.create_task(self.spark_jobs.run()))
        await self.stopping.wait()
        for t in tasks:
            t.cancel()
        await asyncio.gather(self.supervisor.stop_all(), self.spark_jobs.stop_all())
        self.limits.close()

    async def enrol(self) -> None:
        """Enrol now if this node has no certificate yet, trying until it has one (said in its
        health meanwhile); at once if it has one."""
        await self.credentials.enrol(self.backoff, self.health, self.session.failed)

    async def _obey(self, stub: pb_grpc.ClusterStub, command: pb.NodeCommand) -> None:
        """One order from the master; one that fails is said in health, never ends the session.

        A write that fails (``OSError``: a full disk) does end it: the master repeats every
        order when the node attaches again, so the order is tried again after the backoff."""
        which = command.WhichOneof("command")
        sub = getattr(command, which) if which else None
        topology = getattr(sub, "topology", "") or "?"
        try:
            await self._on_command(stub, command)
        except (asyncio.CancelledError, grpc.RpcError, OSError):
            raise
        except Exception as exc:  # a topology that does not load here, or a bug: say which
            log.exception("order %s for %r failed", which, topology)
            self.health.set(
                f"order:{topology}", FAILED, f"{which} failed: {type(exc).__name__}: {exc}"
            )
        else:
            self.health.clear(f"order:{topology}")
            self.health.clear("fetch")

    async def _on_command(self, stub: pb_grpc.ClusterStub, command: pb.NodeCommand) -> None:
        which = command.WhichOneof("command")
        if await self.spark_jobs.obey(stub, command):  # kind spark-job
            return
        if which == "revoked":
            self._revoked(list(command.revoked.node_ids))
            return
        if which == "send_logs":  # answered aside: a slow disk does not hold up the orders
            task = asyncio.get_running_loop().create_task(self._send_logs(stub, command.send_logs))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
            return
        sub = getattr(command, which) if which else None
        problem = name_problem(sub.topology, "topology name") if sub is not None else None
        if sub is not None and problem is None and hasattr(sub, "package"):
            problem = digest_problem(sub.package) or entry_problem(sub.entry)
        if problem is not None:
            raise HeadwaterError(f"refusing the order: {problem}")
        if which == "run":
            run = command.run
            key = (run.topology, run.container)
            known = self.orders.get(key)
            if known is not None and known.package == run.package:
                return  # already running it: a re-attach repeats the orders
            if known is not None:  # killed and submitted again while this node was away
                log.info("%r was submitted again: its container %d starts afresh", *key)
                await self._stop(key)
            try:
                entry = await self.packages.fetched(stub, run)
            except (PackageMismatchError, PackageRefusedError) as exc:
                self.error = str(exc)
                log.error("%s", exc)
                return
            self.orders[key] = run
            try:
                self._start(run, entry)
            except BaseException:
                self.orders.pop(key, None)  # not running: the master's repeat is not ignored
                raise
            self.ordered()
        elif which == "stop":
            await self._stop((command.stop.topology, command.stop.container))
        elif which == "set_state":
            self.set_state(command.set_state.topology, command.set_state.state)
        elif which == "revise":
            r = command.revise
            try:
                await self.packages.fetched(stub, pb.RunContainer(package=r.package, entry=r.entry))
            except (PackageMismatchError, PackageRefusedError) as exc:
                self.error = str(exc)
                log.error("%s", exc)
                return
            self.revise(r)
        elif which == "move_state":
            self.move_state(command.move_state)

    async def _send_logs(self, stub: pb_grpc.ClusterStub, order: pb.SendLogs) -> None:
        """Answer the master's ``SendLogs``: the last lines of a container's logs here."""
        read, running = self.spark_jobs.read_logs, set(self.orders)  # a driver's, or read_logs
        reply = await asyncio.to_thread(read, self.node_id, self.workdir, order, running)
        try:
            await stub.ReturnLogs(reply, timeout=10.0)
        except grpc.RpcError as exc:  # the master gave up waiting, or the session ended
            log.debug("logs for %r not delivered: %s", order.topology, exc.details())

    def _revoked(self, node_ids: list[str]) -> None:
        """Keep the cluster's revoked nodes where this node's stream managers read them."""
        if self.transport.secure:
            write_private(self.tls_dir / REVOKED_FILE, json.dumps(sorted(node_ids)).encode())
            log.info("revoked nodes: %s", ", ".join(sorted(node_ids)))

    async def _stop(self, key: tuple[str, int]) -> None:
        await self.supervisor.stop(key)
        self.stopped(key[0])
        if not any(t == key[0] for t, _ in self.containers):
            self.limits.remove(key[0])
        self.ordered()

    def _start(self, run: pb.RunContainer, entry: Path) -> None:
        """Start ``run``'s container (an agent starts its edge subgraph's topology master first),
        from its package's folder as checked against the package's zip just now."""
        self.supervisor.start(run, self.checked_entry(run))

    # the supervisor's ContainerHooks: what a container is started with (agents run edge
    # containers instead)
    def launch_container(
        self, run: pb.RunContainer, args: list[str], env: dict[str, str], log_path: Path
    ) -> Proc:
        """Start a container (``python ARGS``): a process (an agent may host it instead).
        A cloud container gets the shared checkpoint store's credentials on its stdin."""
        shared = self.checkpoint_store if run.domain != "edge" else None
        # no byte code next to a package's files: a .pyc there would be a change (_unpacked.py)
        return spawn(
            [*args, *(shared.args() if shared is not None else [])],
            env={**env, **NO_BYTECODE},
            log_path=str(log_path),
            preexec=self.limits.joiner(run.topology),  # in its topology's control groups
            stdin=shared.credentials.ini() if shared is not None else None,
        )

    def container_module(self, run: pb.RunContainer) -> str:
        return "headwater.common.runtime.container"

    def container_run_as(self, run: pb.RunContainer) -> RunAs | None:
        """The user ``run``'s topology code runs as (None: this node's own)."""
        return self.code_user(run.topology)

    def code_user(self, topology: str) -> RunAs | None:
        """The user ``topology``'s code runs as here, in its control groups (None: this
        node's own)."""
        run_as = self.users.run_as(topology)
        if run_as is None:
            return None
        return replace(run_as, groups=self.limits.joiner(topology).procs)

    def tmaster_address(self, run: pb.RunContainer) -> str:
        return self.master

    def container_domain(self, run: pb.RunContainer) -> list[str]:
        return domain_args(run.domain or "cloud")

    def container_env(self, run: pb.RunContainer) -> dict[str, str]:
        return {}

    def ordered(self) -> None:
        """The run orders changed (agents keep them on disk; a worker's come from the master)."""

    def stopped(self, topology: str) -> None:
        """A topology's container here was stopped for good (killed)."""

    def set_state(self, topology: str, state: str) -> None:
        """Activate or deactivate what this node runs of ``topology`` (agents: the edge)."""

    def revise(self, order: pb.Revise) -> None:
        """Switch what this node runs of a topology to a new revision (agents: the edge)."""

    def move_state(self, order: pb.MoveState) -> None:
        """A keyed move's state for this node's site (agents: the edge)."""

    def status(self) -> pb.NodeStatus:
        return pb.NodeStatus(
            node_id=self.node_id,
            containers=[f"{t}/{c}" for (t, c), p in self.containers.items() if p.poll() is None],
            error=self.error,
            metrics={"uptime_s": round(time.monotonic() - self.started, 1)},
            health=self.health.state,
            reasons=self.health.reasons(),
            spark_jobs=self.spark_jobs.statuses(),
        )
