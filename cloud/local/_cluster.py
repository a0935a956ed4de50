"""A local cluster of real processes: the local-process scheduler backend.

``LocalCluster`` validates and packs the topology in the calling process
(so a bad topology fails before any process starts), then starts one
topology master process and N container processes; each container starts
one process per instance. Every child dies with its parent, so nothing
outlives the cluster even when the launcher is killed. Their command lines are
in ``_commands``; what a crash loop says, in ``_crash_report``.

>>> with LocalCluster("examples/iot/wordcount.py", containers=2) as cluster:  # doctest: +SKIP
...     cluster.wait_running()
...     print(cluster.metrics()["components"])
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from headwater.common._exceptions import ClusterError
from headwater.common.api import Topology
from headwater.common.control import CrashLoopDetector, CrashLoopPolicy, check_same_topology
from headwater.common.control._crashloop import DEFAULT_POLICY
from headwater.common.plan import PhysicalPlan, load_topology, pack_round_robin, validate
from headwater.common.runtime._procs import spawn, terminate
from headwater.common.security import ClusterCA, Identity, TokenStore
from headwater.common.security._files import write_private

from ._commands import container_args, tmaster_args
from ._crash_report import crash_loop_error
from ._logs import end_run, record_run

log = logging.getLogger("headwater.local")
SILENT_AFTER_S = 10.0  # a container heartbeats every second: stopped or hung past this


def state_dir() -> Path:
    """Where running local clusters are recorded for ``headwater status``."""
    base = os.environ.get("HEADWATER_STATE_DIR") or os.path.join(
        os.environ.get("XDG_STATE_HOME", os.path.expanduser("~/.local/state")), "headwater"
    )
    return Path(base)


class LocalCluster:
    """Run one topology file as real processes on this machine."""

    def __init__(
        self,
        topology_file: str | os.PathLike[str],
        *,
        containers: int = 1,
        topology: str | None = None,
        workdir: str | os.PathLike[str] | None = None,
        env: dict[str, str] | None = None,
        crash_loop: CrashLoopPolicy = DEFAULT_POLICY,
        insecure: bool = False,
        keep_logs: bool = False,
    ) -> None:
        if containers < 1:
            raise ClusterError(f"--containers must be 1 or more, got {containers}")
        self.topology_file = str(Path(topology_file).resolve())
        self.topology_name = topology
        # the file runs with the cluster's environment here too, so that the
        # launcher packs exactly the topology its processes will build
        with _environ(env or {}):
            self.topology: Topology = load_topology(topology_file, topology)
        validate(self.topology)
        self.plan: PhysicalPlan = pack_round_robin(self.topology, containers)
        self.containers = containers
        self._own_workdir = workdir is None
        # a temporary work directory is deleted at stop(), its ``*.log`` files kept if asked
        self.keep_logs = keep_logs
        # short path: Unix socket paths must stay under 108 bytes
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="hw-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        # resuming from an old work directory: refuse another topology before starting
        check_same_topology(
            self.workdir / "tmaster-state" / "topology.json", self.topology, self.plan
        )
        self.env = dict(env or {})
        # development only: plaintext gRPC links and a topology master API without tokens
        self.insecure = insecure
        self.tmaster: subprocess.Popen[bytes] | None = None
        self.container_procs: dict[int, subprocess.Popen[bytes]] = {}
        self.grpc_address = ""
        self.http_address = ""
        self._record: Path | None = None
        self._token_file: Path | None = None
        self._logs_record: Path | None = None  # where `headwater logs` finds the logs
        self.token = ""  # an operator's token for its topology master's API (made by start())
        self._stopping = threading.Event()
        self.crash_loops = CrashLoopDetector(crash_loop)  # of the processes restarted here
        self.failed = False  # a crash loop ended the run: stop() keeps the logs
        self._next_silence_check = 0.0

    @property
    def _grpc_ready(self) -> Path:
        """Where the master writes its gRPC address first (its containers read it)."""
        return self.workdir / "tmaster-grpc.json"

    @property
    def tls_dir(self) -> Path:
        return self.workdir / "tls"

    # -- lifecycle ---------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> LocalCluster:
        # first, so that `headwater logs` finds a run that fails to start too
        self._logs_record = record_run(state_dir(), self.topology.name, self.workdir, self.plan)
        # a token for this run only: a new tokens file each start, so an old run's is void
        tokens = self.workdir / "tokens.json"
        tokens.unlink(missing_ok=True)
        self.token = TokenStore(tokens).create("operator", description="headwater run")
        # and credentials for this run only: a throwaway CA and one certificate its topology
        # master and containers all speak with (mutual TLS on every link, as in a cluster)
        if not self.insecure:
            ClusterCA.create().issue(Identity("local", "run"), days=3650).save(self.tls_dir)
        # the containers start beside their topology master, each registering once the
        # master has written its gRPC address (``tmaster-grpc.json``, before its HTTP API
        # starts): their start-up overlaps its own
        self._spawn_tmaster()
        try:
            for c in range(self.containers):
                self._start_container(c)
            self._wait_tmaster(timeout)
        except BaseException:  # a master that failed to start: nothing it started outlives it
            terminate(list(self.container_procs.values()), grace_s=3.0)
            raise
        self._write_record()
        return self

    def _start_tmaster(self, timeout: float = 30.0) -> None:
        """Restart the topology master, on the same ports and state."""
        self._spawn_tmaster()
        self._wait_tmaster(timeout)

    def _spawn_tmaster(self) -> None:
        ready = self.workdir / "tmaster.json"
        ready.unlink(missing_ok=True)
        self._grpc_ready.unlink(missing_ok=True)
        args = tmaster_args(
            self.topology_file,
            self.topology_name,
            self.containers,
            self.workdir,
            ready,
            insecure=self.insecure,
            tls_dir=self.tls_dir,
            grpc_address=self.grpc_address,
            http_address=self.http_address,
            grpc_ready=self._grpc_ready,
        )
        self.tmaster = spawn(args, env=self.env, log_path=str(self.workdir / "tmaster.log"))

    def _wait_tmaster(self, timeout: float) -> None:
        """Wait for the master's ``tmaster.json`` (written once it listens): its addresses."""
        assert self.tmaster is not None
        info = _wait_ready(self.tmaster, self.workdir / "tmaster.json", self.workdir, timeout)
        self.grpc_address, self.http_address = info["grpc"], info["http"]

    def _start_container(self, c: int) -> None:
        args = container_args(
            self.topology_file,
            self.topology_name,
            c,
            self.containers,
            self.grpc_address,
            self.workdir,
            insecure=self.insecure,
            tls_dir=self.tls_dir,
            tmaster_file=self._grpc_ready,
        )
        self.container_procs[c] = spawn(
            args, env=self.env, log_path=str(self.workdir / f"container-{c}.log")
        )

    def restart_dead(self) -> list[str]:
        """Restart the master and the containers whose process has exited; name them.

        A container alive but silent (no heartbeat at the master for ``SILENT_AFTER_S``:
        SIGSTOPped or hung) is killed first, so it is restarted too."""
        self._kill_silent()
        restarted = []
        if self.tmaster is not None and self.tmaster.poll() is not None:
            self.crash_loops.failed("the topology master", f"exited with {self.tmaster.returncode}")
            self._start_tmaster()
            restarted.append("the topology master")
        for c, p in list(self.container_procs.items()):
            if p.poll() is not None:
                self.crash_loops.failed(f"container {c}", f"exited with {p.returncode}")
                self._start_container(c)
                restarted.append(f"container {c}")
        return restarted

    def _kill_silent(self) -> None:
        now = time.monotonic()
        if now < self._next_silence_check:
            return
        self._next_silence_check = now + 1.0
        try:
            containers = self.summary()["containers"]
        except (OSError, KeyError, ValueError):
            return  # the master is away: nothing to judge by
        for c in containers:
            p = self.container_procs.get(c["container"])
            if p is None or p.poll() is not None or p.pid != c["pid"]:
                continue  # dead already, or the master still knows an old incarnation
            if c["heartbeat_s_ago"] > SILENT_AFTER_S:
                log.warning(
                    "container %d (pid %d) silent for %.0fs: stopped or hung; killing it",
                    c["container"],
                    p.pid,
                    c["heartbeat_s_ago"],
                )
                p.kill()
                p.wait()

    def check(self) -> None:
        """Raise ``CrashLoopError`` (saying what, why, and where the logs are) if a
        component, a container or the topology master is crash-looping."""
        error = crash_loop_error(self.topology.name, self.workdir, self.crash_loops, self.summary)
        if error is not None:
            self.failed = True
            raise error

    def supervise(self, interval: float = 0.2) -> None:
        """Restart dead processes from a background thread until ``stop()``."""

        def loop() -> None:
            while not self._stopping.wait(interval):
                try:
                    self.restart_dead()
                except Exception:  # keep supervising: the next round retries
                    log.exception("restarting a dead process failed")

        threading.Thread(target=loop, name="hw-supervisor", daemon=True).start()

    def stop(self) -> None:
        self._stopping.set()
        procs = list(self.container_procs.values())
        terminate(procs, grace_s=8.0)
        if self.tmaster is not None:
            terminate([self.tmaster], grace_s=3.0)
        for record in (self._record, self._token_file):
            if record is not None:
                record.unlink(missing_ok=True)
        keep = self.failed or os.environ.get("HEADWATER_KEEP_WORKDIR")
        if self._own_workdir and not keep:
            if self.keep_logs:
                _delete_all_but_logs(self.workdir)
            else:
                shutil.rmtree(self.workdir, ignore_errors=True)
        if self._logs_record is not None:
            end_run(self._logs_record, self.workdir, self.logs_kept)
            self._logs_record = None

    @property
    def logs_kept(self) -> bool:
        """Whether the work directory's logs outlive ``stop()``."""
        keep = self.failed or bool(os.environ.get("HEADWATER_KEEP_WORKDIR"))
        return not self._own_workdir or keep or self.keep_logs

    def __enter__(self) -> LocalCluster:
        return self.start()

    def __exit__(
        self, et: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _write_record(self) -> None:
        d = state_dir()
        d.mkdir(parents=True, exist_ok=True)
        self._record = d / f"{self.topology.name}.json"
        # the token beside the record, readable by this user only (`headwater status` uses it)
        self._token_file = d / f"{self.topology.name}.token"
        write_private(self._token_file, f"{self.token}\n".encode())
        # atomically: `headwater status` and the tests read it while the run starts
        record = {
            "topology": self.topology.name,
            "http": self.http_address,
            "grpc": self.grpc_address,
            "pid": os.getpid(),
            "workdir": str(self.workdir),
            "token_file": str(self._token_file),
        }
        write_private(self._record, json.dumps(record).encode())

    # -- observing ---------------------------------------------------------------
    def get(self, path: str) -> Any:
        url = f"{self.http_address}/api/v1/topologies/{self.topology.name}{path}"
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.token}"})
        with urllib.request.urlopen(req, timeout=5) as resp:
            return json.loads(resp.read())

    def metrics(self) -> dict[str, Any]:
        return self.get("/metrics")  # type: ignore[no-any-return]

    def summary(self) -> dict[str, Any]:
        return self.get("")  # type: ignore[no-any-return]

    def wait_running(self, timeout: float = 60.0) -> None:
        """Block until every instance has connected to its stmgr; raise ``CrashLoopError``
        at once if one keeps failing instead."""
        deadline = time.monotonic() + timeout
        expected = {str(i.task_id) for i in self.plan.instances}
        while time.monotonic() < deadline:
            self._check_alive()
            self.check()
            try:
                tasks = self.metrics()["tasks"]
                if all(tasks.get(t, {}).get("connected") == 1.0 for t in expected):
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise ClusterError(
            f"not every instance connected within {timeout}s; logs in {self.workdir}"
        )

    def _check_alive(self) -> None:
        if self._stopping.is_set():
            return
        if self.tmaster is not None and self.tmaster.poll() is not None:
            raise ClusterError(f"the topology master exited; see {self.workdir / 'tmaster.log'}")

    def pids(self) -> dict[str, int]:
        """Live PIDs: 'tmaster', 'container:N' and 'task:N' (from the master's metrics)."""
        out: dict[str, int] = {}
        if self.tmaster is not None:
            out["tmaster"] = self.tmaster.pid
        for c, p in self.container_procs.items():
            out[f"container:{c}"] = p.pid
        for task, m in self.metrics()["tasks"].items():
            if "pid" in m:
                out[f"task:{task}"] = int(m["pid"])
        return out


def _wait_ready(
    tmaster: subprocess.Popen[bytes], ready: Path, workdir: Path, timeout: float
) -> dict[str, Any]:
    """The master's ready file once it is there (looked for from every 2 ms, up to 20 ms)."""
    deadline = time.monotonic() + timeout
    delay = 0.002
    while not ready.exists():
        if tmaster.poll() is not None:
            raise ClusterError(
                f"the topology master exited with {tmaster.returncode}; "
                f"see {workdir / 'tmaster.log'}"
            )
        if time.monotonic() > deadline:
            raise ClusterError(f"the topology master did not start in {timeout}s")
        time.sleep(delay)
        delay = min(0.02, delay * 2)
    return json.loads(ready.read_text())  # type: ignore[no-any-return]


@contextmanager
def _environ(env: dict[str, str]) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _delete_all_but_logs(workdir: Path) -> None:
    """Delete a finished run's state, sockets, credentials and tokens; keep its ``*.log``."""
    for path in workdir.iterdir():
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        elif path.suffix != ".log":
            path.unlink(missing_ok=True)
