"""The Spark jobs a worker runs: each a driver process, supervised, its status reported.

The master gives a worker a Spark job as a ``RunContainer`` of kind ``spark-job``
(its ``SparkJob`` says the mode, the Spark master, the parameters and the folders).
The worker fetches the job's package as a topology's, then runs ``python -m
headwater.cloud.spark.driver --job FILE ...`` (``DRIVER_MODULE``: a string, since
common never imports cloud) in ``WORKDIR/spark/NAME/``, its output in ``driver.log``
there, under the job's own user where the node isolates user code (``code_user``,
the job's name standing for the topology). The driver touches its beat file every
second and writes ``status.json`` (common/runtime/_procs.py ``beat_file(home, 0)``).
A job whose order carries a registry token (it declared the models it registers) gets
``--registry-stdin``, and the master's API URL, the token and the model names as one
JSON line on its standard input (``registry_input``): never on its command line, in
the environment or in a file.

Supervision, every 0.2 s: a driver silent for ``SILENT_AFTER_S`` is killed; one that
exits non-zero is restarted, at once the first time and then with backoff
(``RESTART``), each death counted by the node's ``CrashLoopWatch`` (a crash loop is
in the node's health and in the job's status); one that exits 0 in ``once`` mode with
its run succeeded (its ``status.json`` says so) is done and not restarted; exit 0
mid-run (a job's ``os._exit(0)``) is a failure. ``statuses`` reads each job's
``status.json`` (bounded; a regular file only, never through a symlink: the job owns
its folder) for the node's ``NodeStatus``; the driver's log is never written through a
link the job planted. A stop order (kind ``spark-job``) ends the driver.

The test hook ``HEADWATER_SPARK_DRIVER`` (environment) names another module to run
as the driver: tests supervise a process of their own with it, nothing else should.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
import re
import stat
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from .._exceptions import HeadwaterError
from .._health import FAILED, Health
from .._ids import name_problem
from .._retry import Backoff
from .._sandbox import RunAs
from .._unpacked import NO_BYTECODE
from ..control._crashloop import CrashLoop, CrashLoopWatch
from ..runtime._procs import BeatWatch, Proc, beat_file, spawn, terminate
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._containers import RESTART, SILENT_AFTER_S
from ._logs import read_logs, tail_file

if TYPE_CHECKING:
    from ._limits import TopologyGroups
    from ._packages import Packages

log = logging.getLogger("headwater.node")
KIND = "spark-job"
DRIVER_MODULE = "headwater.cloud.spark.driver"
DRIVER_ENV = "HEADWATER_SPARK_DRIVER"
"""A test hook: the module to run instead of ``DRIVER_MODULE``."""
DRIVER_LOG = "driver.log"
MAX_STATUS_BYTES = 64 << 10
JOB_CHECKPOINTS = "_checkpoints/spark-jobs"
"""Under the warehouse, the folder of each job's checkpoints (``NAME``): never a rollup
grain's (``WAREHOUSE/_checkpoints/GRAIN``: no grain has a '-' in its name)."""


class SparkNode(Protocol):
    """What the runner uses of the worker it runs on."""

    @property
    def workdir(self) -> Path: ...
    @property
    def health(self) -> Health: ...
    @property
    def crash_loops(self) -> CrashLoopWatch: ...
    @property
    def packages(self) -> Packages: ...  # a job's package, fetched by hash
    @property
    def containers(self) -> Mapping[tuple[str, int], Proc]: ...
    @property
    def limits(self) -> TopologyGroups: ...  # a job's control groups
    def code_user(self, topology: str) -> RunAs | None: ...


class SparkJobRunner:
    """A worker's Spark jobs: orders, driver processes, their supervision and status."""

    def __init__(self, node: SparkNode, folders: tuple[Path, Path] | None = None) -> None:
        """``folders``: the landing and the warehouse a job gets when its order names none
        (default: ``WORKDIR/landing`` and ``WORKDIR/warehouse``)."""
        self.node = node
        workdir = node.workdir.absolute()  # a driver runs in its own folder
        self.root = workdir / "spark"
        self.landing, self.warehouse = folders or (workdir / "landing", workdir / "warehouse")
        self.health: Health = node.health
        self.crash_loops: CrashLoopWatch = node.crash_loops
        self.code_user: Callable[[str], RunAs | None] = node.code_user
        self.orders: dict[str, tuple[pb.RunContainer, Path]] = {}
        self.procs: dict[str, Proc] = {}
        self.done: set[str] = set()  # once jobs whose driver exited 0
        self.restarts: dict[str, int] = {}
        self._backoff: dict[str, Backoff] = {}
        self._due: dict[str, float] = {}
        self._beats = BeatWatch()

    def home(self, name: str) -> Path:
        problem = name_problem(name, "Spark job name")
        if problem is not None:
            raise ValueError(problem)
        return self.root / name

    # -- orders --------------------------------------------------------------------
    async def obey(self, stub: pb_grpc.ClusterStub, command: pb.NodeCommand) -> bool:
        """Obey an order about a Spark job (run or stop of kind spark-job); whether it was
        one. A name that is not a safe name is refused (HeadwaterError)."""
        which = command.WhichOneof("command")
        sub = getattr(command, which) if which in ("run", "stop") else None
        if sub is None or sub.kind != KIND:
            return False
        problem = name_problem(sub.topology, "Spark job name")
        if problem is not None:
            raise HeadwaterError(f"refusing the order: {problem}")
        if which == "stop":
            await self.stop(sub.topology)
        else:
            await self.order(sub, await self.node.packages.fetched(stub, sub))
        return True

    async def order(self, run: pb.RunContainer, entry: Path) -> None:
        """Run the job ``run`` orders (``entry``: its file, fetched); a repeat is ignored."""
        known = self.orders.get(run.topology)
        if known is not None and known[0] == run:
            return  # a re-attach repeats the orders
        if known is not None:
            await self.stop(run.topology)
        self.orders[run.topology] = (run, entry.absolute())
        self._start(run.topology)

    async def stop(self, name: str) -> None:
        """Withdraw the job's order and end its driver."""
        self.orders.pop(name, None)
        self.done.discard(name)
        self._due.pop(name, None)
        self._backoff.pop(name, None)
        self.restarts.pop(name, None)
        self.crash_loops.forget(f"Spark job {name!r}")
        self.health.clear(f"supervise:{name}")
        proc = self.procs.pop(name, None)
        if proc is not None:
            await asyncio.get_running_loop().run_in_executor(None, terminate, [proc], 10.0)
            log.info("stopped the driver of Spark job %r", name)
        with contextlib.suppress(OSError):  # a job of that name anew (a folder: read as none)
            (self.home(name) / "status.json").unlink(missing_ok=True)
        if not any(t == name for t, _ in self.node.containers):  # its control groups too
            self.node.limits.remove(name)

    async def stop_all(self) -> None:
        procs = list(self.procs.values())
        self.procs.clear()
        await asyncio.get_running_loop().run_in_executor(None, terminate, procs, 10.0)

    def args(self, run: pb.RunContainer, entry: Path, home: Path) -> list[str]:
        job = run.job
        warehouse = job.warehouse or str(self.warehouse)
        out = [
            "-m",
            os.environ.get(DRIVER_ENV) or DRIVER_MODULE,
            "--job",
            str(entry),
            f"--name={run.topology}",  # a name may start with '-'
            "--landing",
            job.landing or str(self.landing),
            "--warehouse",
            warehouse,
            "--checkpoint",  # with the warehouse: a job moved to another worker resumes
            str(Path(warehouse) / JOB_CHECKPOINTS / run.topology),
            "--workdir",
            str(home),
        ]
        for key, value in sorted(job.params.items()):
            out += ["--param", f"{key}={value}"]
        if job.mode == "every":
            out += ["--every", f"{job.every_s:g}"]
        elif job.mode == "continuous":
            out.append("--continuous")
        if job.spark_master:
            out += ["--spark-master", job.spark_master]
        if job.registry_token:
            out.append("--registry-stdin")  # the flag only: the token comes on stdin
        return out

    def _start(self, name: str) -> None:
        run, entry = self.orders[name]
        home = self.home(name)
        home.mkdir(parents=True, exist_ok=True)
        _unplant(home / DRIVER_LOG)
        run_as = self.code_user(name)
        if run_as is not None:  # its driver writes its status and checkpoints here
            os.chown(home, run_as.uid, run_as.gid)
        self.procs[name] = spawn(
            self.args(run, entry, home),
            env=NO_BYTECODE,
            log_path=str(home / DRIVER_LOG),
            cwd=str(home),  # Spark writes beside it; never into the package's folder
            run_as=run_as,
            stdin=registry_input(run.job),
        )
        log.info("started the driver of Spark job %r (%s)", name, run.job.mode)

    # -- supervision ---------------------------------------------------------------
    def supervise(self) -> None:
        """One round: kill the silent, restart the dead (with backoff), leave the done."""
        for name, proc in list(self.procs.items()):
            what = f"Spark job {name!r}"
            try:
                self._beats.kill_if_silent(
                    proc, beat_file(self.home(name), 0), SILENT_AFTER_S, what
                )
                code = proc.poll()
                if code is None or name not in self.orders or name in self.done:
                    continue
                if code == 0 and self._succeeded_once(name):
                    self.done.add(name)  # it succeeded: nothing to restart
                    log.info("%s succeeded", what)
                    continue
                self._restart(name, what, code)
            except Exception as exc:  # a restart that cannot start (no memory to fork)
                log.exception("supervising %s", what)
                self.health.set(f"supervise:{name}", FAILED, f"cannot restart {what}: {exc}")
                self._due[name] = time.monotonic() + 5.0

    def _succeeded_once(self, name: str) -> bool:
        """Whether the once job's driver ended its run well (it says so before exiting 0; a
        job that ends the process mid-run, os._exit(0), leaves it "running")."""
        if self.orders[name][0].job.mode != "once":
            return False
        return _read_status(self.home(name) / "status.json").get("state") == "succeeded"

    def _restart(self, name: str, what: str, code: int) -> None:
        now = time.monotonic()
        if name not in self._due:
            self.crash_loops.failed(what, f"its driver exited with {code}")
            retry = self._backoff.get(name)
            if retry is None:
                self._backoff[name], delay = RESTART.start(), 0.0
            else:
                delay = retry.next_delay()
            self._due[name] = now + delay
            log.warning("%s: its driver exited with %s; restarting in %.1fs", what, code, delay)
        if now < self._due[name]:
            return
        del self._due[name]
        self.restarts[name] = self.restarts.get(name, 0) + 1
        self._start(name)
        self.health.clear(f"supervise:{name}")

    async def run(self) -> None:
        while True:
            await asyncio.sleep(0.2)
            self.supervise()

    # -- what the node reports -------------------------------------------------------
    def statuses(self) -> list[pb.SparkJobStatus]:
        loops = self.crash_loops.detector.loops()
        return [self._status(name, loops) for name in sorted(self.orders)]

    def _status(self, name: str, loops: dict[str, CrashLoop]) -> pb.SparkJobStatus:
        run = self.orders[name][0]
        raw = _read_status(self.home(name) / "status.json")
        last = raw.get("last_run") if isinstance(raw.get("last_run"), dict) else {}
        assert isinstance(last, dict)
        s = pb.SparkJobStatus(name=name, mode=run.job.mode, package=run.package)
        s.state = _text(raw.get("state")) or "starting"
        s.pid = _int(raw.get("pid"))
        s.runs = _int(raw.get("runs"))
        s.started, s.ended = _num(last.get("started")), _num(last.get("ended"))
        s.ok = last.get("ok") is True
        s.rows_read, s.rows_written = _int(last.get("rows_read")), _int(last.get("rows_written"))
        s.error = _text(last.get("error"))
        s.updated = _num(raw.get("updated"))
        s.restarts = self.restarts.get(name, 0)
        loop = loops.get(f"Spark job {name!r}")
        s.crash_loop = loop.describe() if loop is not None else ""
        proc = self.procs.get(name)
        code = proc.poll() if proc is not None else None
        if code:  # died (not yet restarted): its status.json may be stale
            s.state = "failed"
            s.error = s.error or f"the driver exited with {code} (see its log: headwater logs)"
        elif code == 0 and run.job.mode == "once" and s.state != "succeeded":
            s.state = "failed"
            s.error = "the driver exited 0 before its run ended (a job that calls os._exit?)"
        return s

    def read_logs(
        self, node_id: str, workdir: Path, order: pb.SendLogs, running: set[tuple[str, int]]
    ) -> pb.LogsReply:
        """The reply to a ``SendLogs``: of kind spark-job, the driver's log; else a
        container's (``_logs.read_logs``). Blocks on I/O."""
        if order.kind != KIND:
            return read_logs(node_id, workdir, order, running)
        reply = pb.LogsReply(
            request_id=order.request_id, node_id=node_id, topology=order.topology, kind=KIND
        )
        if order.topology not in self.orders:
            reply.error = f"this node runs no Spark job {order.topology[:64]!r}"
            return reply
        path = self.home(order.topology) / DRIVER_LOG
        try:
            text, truncated = tail_file(path, order.tail)
        except OSError:
            text, truncated = "", False
        reply.files.append(
            pb.LogFile(name=DRIVER_LOG, path=str(path), text=text, truncated=truncated)
        )
        return reply


def registry_input(job: pb.SparkJob) -> bytes | None:
    """What a registering job's driver reads on its standard input: one JSON line with
    the API's URL, the job's token and its model names; None for a job that registers
    nothing."""
    if not job.registry_token:
        return None
    doc = {"url": job.registry_url, "token": job.registry_token, "models": list(job.registers)}
    return (json.dumps(doc) + "\n").encode()


def _unplant(log_path: Path) -> None:
    """Remove what the job put where its driver's log goes (a symlink, a FIFO): its folder is
    the job's, the log the worker's; the worker never writes through what a job planted."""
    try:
        mode = log_path.lstat().st_mode
    except FileNotFoundError:
        return
    if stat.S_ISREG(mode):
        return
    log.warning("%s was not a regular file (the job's doing?): replaced", log_path)
    if stat.S_ISDIR(mode):  # the job's folder: moved aside, its files kept
        log_path.rename(log_path.with_name(f"{DRIVER_LOG}.not-a-log-{time.time_ns()}"))
    else:
        log_path.unlink()


def _read_status(path: Path) -> dict[str, object]:
    """The job's status file: the job's own to write, so a regular file only (never a FIFO
    that would block the worker, nor a symlink to a file of the worker's), bounded."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return {}
            data = os.read(fd, MAX_STATUS_BYTES + 1)
        finally:
            os.close(fd)
        raw = json.loads(data) if len(data) <= MAX_STATUS_BYTES else {}
    except (OSError, ValueError, RecursionError):
        return {}
    return raw if isinstance(raw, dict) else {}


_SURROGATE = re.compile("[\ud800-\udfff]")


def _text(v: object) -> str:
    """A string the report can carry (JSON's lone surrogates are no UTF-8: replaced)."""
    return _SURROGATE.sub("\ufffd", v[:2000]) if isinstance(v, str) else ""


def _int(v: object) -> int:
    return (
        int(v) if isinstance(v, int | float) and not isinstance(v, bool) and abs(v) < 2**62 else 0
    )


def _num(v: object) -> float:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else 0.0  # type: ignore[arg-type]
