"""The fleet bench's master: a real ``headwater master`` process, measured from outside.

``FleetMaster`` starts ``headwater master`` on free loopback ports (gRPC, REST, join) with
its own state folder, and starts it again on the same ports and folder (``start`` once
more) after ``kill`` (SIGKILL). A sampler thread reads its CPU seconds (user + system) and
RSS with psutil every ``SAMPLE_S``; ``Window`` holds them over one phase of the bench.

``kill_and_restart`` is one failover the bench times: the master is SIGKILLed and started
again on the same ``--state-dir``; ``bench/fleet_ha.py``'s ``takeover`` is the other (a
standby master leads).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from headwater._demo.run import get_json
from headwater.common._ports import free_ports
from headwater.common.runtime._procs import spawn, terminate

SAMPLE_S = 0.25


@dataclass
class Window:
    """The master's CPU and memory over one phase (across a restart: both processes')."""

    started: float = field(default_factory=time.monotonic)
    cpu_s: float = 0.0
    rss_peak: int = 0
    rss_last: int = 0
    ended: float | None = None

    def result(self) -> dict[str, Any]:
        wall = (self.ended or time.monotonic()) - self.started
        return {
            "wall_s": round(wall, 2),
            "cpu_s": round(self.cpu_s, 2),
            "cores": round(self.cpu_s / wall, 3) if wall > 0 else 0.0,
            "rss_peak_mib": round(self.rss_peak / 2**20, 1),
            "rss_end_mib": round(self.rss_last / 2**20, 1),
        }


class FleetMaster:
    """``headwater master`` on loopback, its state in ``work/master``; sampled while it runs."""

    def __init__(
        self,
        work: Path,
        name: str = "master",
        options: list[str] | None = None,
        token_file: Path | None = None,
    ) -> None:
        """``name``: its state folder, ready file and log in ``work``; ``options``: more of
        ``headwater master``'s (standbys: the shared state and blob store); ``token_file``:
        the admin token it takes (default: the one its first start makes)."""
        self.work = work
        self.name = name
        self.options = list(options or [])
        self.state = work / name
        self.ready = work / f"{name}.json"
        self.token_file = token_file or self.state / "admin.token"
        self.ports = dict(zip(("--port", "--http-port", "--join-port"), free_ports(3), strict=True))
        self.proc: subprocess.Popen[bytes] | None = None
        self.info: dict[str, Any] = {}
        self.window = Window()
        self.profile: Path | None = None  # py-spy's raw stacks of each window go here
        self._spy: subprocess.Popen[bytes] | None = None
        self._last_cpu = 0.0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._sampler = threading.Thread(target=self._sample, daemon=True)
        self._sampler.start()

    @property
    def grpc(self) -> str:
        return f"127.0.0.1:{self.ports['--port']}"

    @property
    def http(self) -> str:
        return f"http://127.0.0.1:{self.ports['--http-port']}"

    @property
    def token(self) -> str:
        """The admin token (the one the master's first start made)."""
        return self.token_file.read_text().strip()

    def start(self, timeout: float = 60.0) -> float:
        """Start the master; the seconds until its ready file said it serves."""
        t0 = time.monotonic()
        self.launch()
        self.wait_ready(timeout)
        return time.monotonic() - t0

    def launch(self) -> None:
        """Start the master's process (a standby serves only once it leads)."""
        self.ready.unlink(missing_ok=True)
        ports = [str(a) for option, port in self.ports.items() for a in (option, port)]
        args = ["master", "--host", "127.0.0.1", *ports, "--no-advertise", *self.options]
        args += ["--state-dir", str(self.state), "--ready-file", str(self.ready)]
        proc = spawn(
            ["-m", "headwater", *args],
            log_path=str(self.work / f"{self.name}.log"),
            cwd=str(self.work),
        )
        with self._lock:
            self.proc, self._last_cpu = proc, 0.0

    def wait_ready(self, timeout: float) -> None:
        """Wait until the ready file says the master serves."""
        deadline = time.monotonic() + timeout
        while not self.ready.exists():
            assert self.proc is not None
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = self.work / f"{self.name}.log"
                raise RuntimeError(f"the master did not start: see {log}")
            time.sleep(0.02)
        self.info = json.loads(self.ready.read_text())

    def kill(self) -> None:
        with self._lock:
            proc = self.proc
        if proc is not None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
            self._take()  # what it used since the last sample is lost with it (< SAMPLE_S)

    def join_token(self) -> str:
        """A join token for agents, made as an operator makes one (``headwater token create``)."""
        create = ["token", "create", "--role", "agent", "--ttl", "2h", "--master", self.http]
        create += ["--token-file", str(self.token_file), "--description", "fleet"]
        out = subprocess.run(
            [sys.executable, "-m", "headwater", *create],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return out.stdout.strip()

    def nodes(self) -> list[dict[str, Any]]:
        return get_json(f"{self.http}/api/v1/nodes", self.token)  # type: ignore[no-any-return]

    def begin(self, name: str = "") -> Window:
        """A new window: the master's CPU and memory from now on (with ``profile``, its
        stacks too, sampled by py-spy into ``profile/NAME.txt``)."""
        self._take()
        with self._lock:
            self.window = Window()
        if self.profile is not None and name:
            self.spy(self.profile / f"{name}.txt")
        return self.window

    def spy(self, out: Path) -> None:
        """Sample the master's stacks into ``out`` (py-spy's raw format) until ``end``."""
        assert self.proc is not None
        self.unspy()
        out.parent.mkdir(parents=True, exist_ok=True)
        spy = ["record", "--pid", str(self.proc.pid), "--format", "raw", "--rate", "50"]
        self._spy = subprocess.Popen(
            ["py-spy", *spy, "--output", str(out), "--nonblocking"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    def unspy(self) -> None:
        if self._spy is not None:
            self._spy.send_signal(signal.SIGINT)  # it writes what it sampled, then ends
            try:
                self._spy.wait(30.0)
            except subprocess.TimeoutExpired:
                self._spy.kill()
                self._spy.wait()
            self._spy = None

    def end(self) -> dict[str, Any]:
        self._take()
        self.unspy()
        with self._lock:
            self.window.ended = time.monotonic()
            return self.window.result()

    def _take(self) -> None:
        with self._lock:
            proc = self.proc
            if proc is None or proc.poll() is not None:
                return
            try:
                p = psutil.Process(proc.pid)
                times, rss = p.cpu_times(), p.memory_info().rss
            except psutil.NoSuchProcess:
                return
            cpu = times.user + times.system
            self.window.cpu_s += cpu - self._last_cpu
            self._last_cpu = cpu
            self.window.rss_peak = max(self.window.rss_peak, rss)
            self.window.rss_last = rss

    def _sample(self) -> None:
        while not self._stop.wait(SAMPLE_S):
            self._take()

    def stop(self) -> None:
        self.unspy()
        self._stop.set()
        with self._lock:
            proc = self.proc
        if proc is not None:
            terminate([proc], 15.0)


Failover = Callable[[FleetMaster], tuple[float, FleetMaster]]
"""Takes the master away until one serves again (the same one restarted, or a standby that
leads: ``bench/fleet_ha.py``); returns the seconds until then, and the master that serves."""


def kill_and_restart(master: FleetMaster) -> tuple[float, FleetMaster]:
    """SIGKILL the master and start it again on the same ports and ``--state-dir``."""
    t0 = time.monotonic()
    master.kill()
    master.start()
    return time.monotonic() - t0, master
