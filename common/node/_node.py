"""A node daemon: attaches to the master and runs the containers it is given.

Cloud workers and edge agents are nodes. A node dials the master (it is
never dialled), announces itself, and receives run/stop orders on the
attach stream. For each container it fetches the topology's package by
hash, refuses it unless the bytes hash to that name, unpacks it once, and
starts a container process, which it restarts if it dies. It reports
status every few seconds, and reconnects with exponential backoff and
jitter when the master is away; its containers keep running meanwhile.
Asked (``SendLogs``), it sends the master the last lines of one of its
containers' logs (``_logs.py``).

A node's id (unless ``--id`` names one) is generated once and kept in its
workdir (``node-id``): a restart with the same workdir is the same node, so
the master re-sends its orders and the cloud keeps counting its uplink's
sequence numbers. Two live nodes may not share a workdir (it is locked).

An order's names become paths in the workdir, so they are checked before
any path is touched: a topology name must be a safe name, a package name
``sha256:<64 hex>`` and an entry a file inside the package; a package is
bounded and checked before it is unpacked (common/_package.py).

A node speaks to the master, and its containers to everyone, with the
certificate it got when it enrolled (``WORKDIR/tls``): started with
``--join TOKEN`` and no certificate yet, it enrols first (common/security/
_enrol.py); it renews the certificate once a third of its life is left. The
list of revoked nodes the master sends a worker is kept beside it, where its
containers' stream managers read it.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import re
import shutil
import socket
import time
import uuid
from pathlib import Path

os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")  # this process forks containers

import grpc

from .._exceptions import HeadwaterError, PackageMismatchError, PackageRefusedError
from .._health import DEGRADED, FAILED, Health
from .._ids import name_problem
from .._package import digest_problem, entry_problem, unpack_package
from .._retry import Backoff, RetryPolicy
from ..control._crashloop import CrashLoopWatch
from ..plan import domain_args
from ..runtime._procs import BeatWatch, Proc, beat_file, spawn, terminate
from ..security import (
    MASTER_NAME,
    Credentials,
    Identity,
    JoinToken,
    Transport,
    has_credentials,
)
from ..security._enrol import join, renew
from ..security._files import write_private
from ..security._identity import REVOKED_FILE, TLS_DIR
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._logs import read_logs

log = logging.getLogger("headwater.node")
STATUS_S = 2.0
ID_FILE = "node-id"
LOCK_FILE = "node.lock"


def node_identity(workdir: str | Path, kind: str, given: str | None = None) -> str:
    """The node id kept in ``workdir``: ``given`` if named, else the one generated there before,
    else a new ``KIND-HOST-XXXXXXXX`` written (synced) for every later start."""
    path = Path(workdir) / ID_FILE
    if given:
        return given
    try:
        kept = path.read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        kept = ""
    if kept:
        return kept
    path.parent.mkdir(parents=True, exist_ok=True)
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname().split(".")[0])[:40] or "host"
    new = f"{kind}-{host}-{uuid.uuid4().hex[:8]}"  # a node id (common/_ids.py)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(new + "\n")
        f.flush()
        os.fsync(f.fileno())
    tmp.replace(path)
    log.info("generated node id %s (kept in %s)", new, path)
    return new


def lock_workdir(workdir: Path) -> int:
    """Hold ``workdir`` for this process (released when it exits, even by SIGKILL)."""
    fd = os.open(workdir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise HeadwaterError(
            f"workdir {workdir} is in use by another node; give each node its own --workdir"
        ) from None
    return fd


RENEW_CHECK_S = 3600.0  # how often a node looks at its certificate's age
SILENT_AFTER_S = 15.0  # a container touches its beat file every second
RECONNECT = RetryPolicy()
"""Attaching to the master again: 0.2 s to 10 s, with full jitter."""
RESTART = RetryPolicy(initial=0.5, maximum=10.0, jitter=False)
"""A dead container's restarts after the first (which is at once): 0.5 s, 1 s, ... 10 s."""


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
    ) -> None:
        self.master = master
        self.host = host  # where its containers' stream managers listen, and say they are
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.kind = kind
        self.started = time.monotonic()
        self._lock = lock_workdir(self.workdir)
        self.node_id = node_identity(self.workdir, kind, node_id)
        self.labels = dict(labels or {})
        self.version = version
        self.backoff = backoff
        self.containers: dict[tuple[str, int], Proc] = {}
        self.orders: dict[tuple[str, int], pb.RunContainer] = {}
        self.error = ""
        self.stopping = asyncio.Event()
        self.health = Health(self.node_id)
        self.crash_loops = CrashLoopWatch(self.health)  # of the containers restarted here
        self._stub: pb_grpc.ClusterStub | None = None
        self._answering: set[asyncio.Task[None]] = set()  # SendLogs orders being answered
        self.tls_dir = self.workdir / TLS_DIR
        self.transport = Transport.insecure() if insecure else Transport(self.tls_dir)
        self.join_token = join_token
        if self.transport.secure and has_credentials(self.tls_dir):
            held = Credentials.load(self.tls_dir).identity
            if held != Identity(kind, self.node_id):
                if join_token is None:
                    raise HeadwaterError(
                        f"the certificate in {self.tls_dir} names {held}, but this node is "
                        f"{kind} {self.node_id!r}: give it the id it enrolled with, or enrol "
                        "it again with --join TOKEN"
                    )
                log.warning("the certificate names %s, not this node: enrolling again", held)
                shutil.rmtree(self.tls_dir)
        if self.transport.secure and join_token is None and not has_credentials(self.tls_dir):
            raise HeadwaterError(
                f"this node is not enrolled (no certificate in {self.tls_dir}): start it once "
                "with --join TOKEN (`headwater token create --role "
                f"{kind}` on the master's host prints one)"
            )

    @property
    def attached(self) -> bool:
        """Whether a session with the master is open (it may still be catching up)."""
        return self._stub is not None

    def info(self) -> pb.NodeInfo:
        return pb.NodeInfo(
            node_id=self.node_id,
            kind=self.kind,
            labels=self.labels,
            version=self.version,
            pid=os.getpid(),
            hostname=socket.gethostname(),
        )

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        tasks = [loop.create_task(self._session()), loop.create_task(self._supervise())]
        tasks.append(loop.create_task(self._renewing()))
        await self.stopping.wait()
        for t in tasks:
            t.cancel()
        procs = list(self.containers.values())
        self.containers.clear()
        await loop.run_in_executor(None, terminate, procs, 10.0)

    async def _credentials(self) -> None:
        """Enrol if this node has no certificate yet; renew one with a third of its life left."""
        if not self.transport.secure:
            return
        if not has_credentials(self.tls_dir):
            assert self.join_token is not None
            host = self.master.rpartition(":")[0] or self.master
            creds = await join(host, self.join_token, self.node_id)
            creds.save(self.tls_dir)
            log.info("enrolled as %s; the certificate is in %s", creds.identity, self.tls_dir)
            return
        creds = self.transport.credentials()
        life = creds.not_after() - creds.not_before()
        if creds.not_after() - time.time() < life / 3:
            renewed = await renew(self.transport, self.master, self.node_id)
            renewed.save(self.tls_dir)
            log.info("renewed this node's certificate (it expired at %s)", creds.not_after())

    async def enrol(self) -> None:
        """Enrol now if this node has no certificate yet, trying until it has one (said in its
        health meanwhile); at once if it has one."""
        retry = self.backoff.start()
        while self.transport.secure and not has_credentials(self.tls_dir):
            try:
                await self._credentials()
            except (HeadwaterError, grpc.RpcError, OSError) as exc:
                why = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
                self.health.set("master", FAILED, f"cannot enrol: {why}")
                log.error("cannot enrol: %s", why)
                await asyncio.sleep(retry.next_delay())

    async def _renewing(self) -> None:
        """Renew the certificate in time on a session that lasts (a new session checks too)."""
        while True:
            await asyncio.sleep(RENEW_CHECK_S)
            if not self.transport.secure or not has_credentials(self.tls_dir):
                continue
            try:
                await self._credentials()
            except (HeadwaterError, grpc.RpcError, OSError) as exc:
                why = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
                log.warning("cannot renew this node's certificate yet: %s", why)

    async def _session(self) -> None:
        retry = self.backoff.start()
        while True:
            try:
                await self._credentials()
            except asyncio.CancelledError:
                raise
            except (HeadwaterError, grpc.RpcError, OSError) as exc:
                why = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
                self.health.set("master", FAILED, f"cannot enrol or renew: {why}")
                log.error("cannot enrol or renew: %s", why)
                await asyncio.sleep(retry.next_delay())
                continue
            try:
                async with self.transport.channel(
                    self.master,
                    to=MASTER_NAME,
                    options=[
                        ("grpc.max_receive_message_length", 64 << 20),
                    ],
                ) as channel:
                    self._stub = stub = pb_grpc.ClusterStub(channel)
                    status = asyncio.get_running_loop().create_task(self._report(stub))
                    try:
                        async for command in stub.Attach(self.info()):
                            retry.reset()
                            await self._obey(stub, command)
                    finally:
                        status.cancel()
                        self._stub = None
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                if exc.code() in (
                    grpc.StatusCode.PERMISSION_DENIED,
                    grpc.StatusCode.UNAUTHENTICATED,
                ):
                    self.health.set(
                        "master", FAILED, f"the master refuses this node: {exc.details()}"
                    )
                    log.error("the master refuses this node: %s", exc.details())
                    await asyncio.sleep(retry.next_delay())
                    continue
                self.health.set(
                    "master",
                    DEGRADED,
                    f"master {self.master} unreachable "
                    f"({exc.code().name}); containers keep running",
                )
            except OSError as exc:  # a package or an order that cannot be written: a full disk
                self.health.set(
                    "fetch",
                    FAILED,
                    f"cannot take the master's orders: {exc}; "
                    "trying again (the master repeats them)",
                )
            await asyncio.sleep(retry.next_delay())

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
                entry = await self._package(stub, run)
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
                await self._package(stub, pb.RunContainer(package=r.package, entry=r.entry))
            except (PackageMismatchError, PackageRefusedError) as exc:
                self.error = str(exc)
                log.error("%s", exc)
                return
            self.revise(r)

    async def _send_logs(self, stub: pb_grpc.ClusterStub, order: pb.SendLogs) -> None:
        """Answer the master's ``SendLogs``: the last lines of a container's logs here."""
        running = set(self.orders)
        reply = await asyncio.to_thread(read_logs, self.node_id, self.workdir, order, running)
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
        self.orders.pop(key, None)
        proc = self.containers.pop(key, None)
        if proc is not None:
            await asyncio.get_running_loop().run_in_executor(None, terminate, [proc], 10.0)
            log.info("stopped container %d of %r", key[1], key[0])
        self.stopped(key[0])
        self.ordered()

    def code_dir(self, package: str) -> Path:
        """Where ``package`` (``sha256:HEX``) is unpacked here; its zip sits beside it.

        Raises PackageMismatchError for anything else (never a path outside the workdir)."""
        problem = digest_problem(package)
        if problem is not None:
            raise PackageMismatchError(f"refusing topology package: {problem}")
        return self.workdir / "packages" / package.partition(":")[2]

    async def _package(self, stub: pb_grpc.ClusterStub, run: pb.RunContainer) -> Path:
        code = self.code_dir(run.package)
        if not (code / ".verified").exists():
            try:
                reply = await stub.FetchPackage(pb.PackageRequest(package=run.package))
            except grpc.RpcError as exc:
                if exc.code() == grpc.StatusCode.DATA_LOSS:
                    raise PackageMismatchError(str(exc.details())) from exc
                raise
            shutil.rmtree(code, ignore_errors=True)
            unpack_package(reply.data, run.package, code)  # refuses a hash mismatch
            code.with_suffix(".zip").write_bytes(reply.data)  # a live edit hands it on
            (code / ".verified").touch()
        return code / run.entry

    def _start(self, run: pb.RunContainer, entry: Path) -> None:
        home = self.workdir / run.topology / f"container-{run.container}"
        home.mkdir(parents=True, exist_ok=True)
        args = [
            "-m",
            self.container_module(run),
            "--topology-file",
            str(entry),
            "--container",
            str(run.container),
            "--containers",
            str(run.containers),
            "--tmaster",
            self.tmaster_address(run),
            "--workdir",
            str(home),
            "--state-dir",
            str(home / "state"),
            *self.container_domain(run),
            "--host",
            self.host,
            *self.transport.args(),
        ]
        self.containers[(run.topology, run.container)] = self.launch_container(
            args, self.container_env(run), home / "container.log"
        )
        log.info("started container %d of %r", run.container, run.topology)

    def launch_container(self, args: list[str], env: dict[str, str], log_path: Path) -> Proc:
        """Start a container (``python ARGS``): a process (an agent may host it instead)."""
        return spawn(args, env=env, log_path=str(log_path))

    # what a container is started with; agents run edge containers instead
    def container_module(self, run: pb.RunContainer) -> str:
        return "headwater.common.runtime.container"

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

    async def _supervise(self) -> None:
        """Restart dead containers (with backoff) and kill silent ones; never stops."""
        backoff: dict[tuple[str, int], Backoff] = {}
        due: dict[tuple[str, int], float] = {}  # a dead container's restart time (monotonic)
        beats = BeatWatch()
        while True:
            await asyncio.sleep(0.2)
            self.crash_loops.tick()
            for key, proc in list(self.containers.items()):
                try:
                    self._supervise_one(key, proc, beats, backoff, due)
                except Exception as exc:  # a restart that cannot start (no memory to fork)
                    log.exception("supervising container %d of %r", key[1], key[0])
                    self.health.set(
                        f"supervise:{key[0]}",
                        FAILED,
                        f"cannot restart container {key[1]}: {type(exc).__name__}: {exc}",
                    )
                    due[key] = time.monotonic() + 5.0

    def _supervise_one(
        self,
        key: tuple[str, int],
        proc: Proc,
        beats: BeatWatch,
        backoff: dict[tuple[str, int], Backoff],
        due: dict[tuple[str, int], float],
    ) -> None:
        name = f"container {key[1]} of {key[0]!r}"
        beats.kill_if_silent(
            proc,
            beat_file(self.workdir / key[0] / f"container-{key[1]}", key[1]),
            SILENT_AFTER_S,
            name,
        )
        if proc.poll() is None or key not in self.orders:
            return
        now = time.monotonic()
        if key not in due:
            self.crash_loops.failed(name, f"exited with {proc.returncode}")
            retry = backoff.get(key)
            if retry is None:
                backoff[key], delay = RESTART.start(), 0.0
            else:
                delay = retry.next_delay()
            due[key] = now + delay
            log.warning("%s exited with %s; restarting in %.1fs", name, proc.returncode, delay)
        if now < due[key]:
            return
        run = self.orders[key]
        self._start(run, self.code_dir(run.package) / run.entry)
        del due[key]
        self.health.clear(f"supervise:{key[0]}")

    async def _report(self, stub: pb_grpc.ClusterStub) -> None:
        while True:
            try:
                await stub.ReportStatus(self.status())
            except grpc.RpcError as exc:  # a lost channel ends the session too; else beat on
                log.debug("status not delivered: %s", exc.code())
                await asyncio.sleep(STATUS_S)
                continue
            if self.health.has("master"):
                self.health.clear("master")  # it answered: say so at once
                continue
            await asyncio.sleep(STATUS_S)

    def status(self) -> pb.NodeStatus:
        return pb.NodeStatus(
            node_id=self.node_id,
            containers=[f"{t}/{c}" for (t, c), p in self.containers.items() if p.poll() is None],
            error=self.error,
            metrics={"uptime_s": round(time.monotonic() - self.started, 1)},
            health=self.health.state,
            reasons=self.health.reasons(),
        )
