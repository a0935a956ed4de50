"""The fleet bench's simulator processes, seen from the bench: start them, drive them, and
gather what they report.

``Fleet`` splits N agents over ``procs`` processes (agent ``i`` in process ``i % procs``),
each ``python -m bench.fleet_agents`` (its protocol is in that module), and keeps their
events with a thread per process: when each agent enrolled, its sessions, the orders it got
and every status report the master answered. Each process dies with the bench (its standard
input ends; and the kernel's parent-death signal).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from headwater.common.runtime._procs import _die_with_parent, terminate

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Events:
    """What the simulated agents said, by agent index; times are epoch seconds."""

    enrolled: dict[int, float] = field(default_factory=dict)
    sessions: list[tuple[int, float]] = field(default_factory=list)
    orders: list[tuple[int, float, str]] = field(default_factory=list)
    fetched: dict[int, float] = field(default_factory=dict)  # the first run order's package
    ready: int = 0  # processes ready
    reports: list[tuple[int, float, float, bool]] = field(default_factory=list)  # sent, answered

    def take(self, event: list[Any]) -> None:
        kind, i = event[0], int(event[1])
        if kind == "h":
            self.ready += 1
        elif kind == "e":
            self.enrolled[i] = event[2]
        elif kind == "a":
            self.sessions.append((i, event[2]))
        elif kind == "f":
            self.fetched.setdefault(i, event[2])
        elif kind == "c":
            self.orders.append((i, event[2], event[3]))
        elif kind == "r":
            self.reports.append((i, event[2], event[3], bool(event[4])))


class Fleet:
    """N simulated agents in ``procs`` processes, enrolled with ``token`` at ``master``."""

    def __init__(self, work: Path, master: str, token: str, n: int, procs: int) -> None:
        self.n = n
        self.events = Events()
        self.lock = threading.Lock()
        self.procs: list[subprocess.Popen[bytes]] = []
        self._readers: list[threading.Thread] = []
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
        }
        (work / "agents").mkdir(parents=True, exist_ok=True)
        for k in range(min(procs, n)):
            log = open(work / f"agents-{k}.log", "ab")  # noqa: SIM115 (the child holds it)
            proc = subprocess.Popen(
                [sys.executable, "-P", "-m", "bench.fleet_agents"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=log,
                env=env,
                cwd=str(work),
                preexec_fn=_die_with_parent,  # noqa: PLW1509 (no locks taken there)
            )
            log.close()
            self.procs.append(proc)
            hello = {
                "master": master,
                "token": token,
                "work": str(work / "agents"),
                "agents": list(range(k, n, min(procs, n))),
            }
            self._send(proc, {"do": "hello", **hello})
            reader = threading.Thread(target=self._read, args=(proc.stdout,), daemon=True)
            reader.start()
            self._readers.append(reader)
        try:
            self.wait(lambda e: e.ready == len(self.procs), 120, "the simulator processes ready")
        except BaseException:
            self.stop()
            raise

    def _send(self, proc: subprocess.Popen[bytes], line: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write((json.dumps(line) + "\n").encode())
        proc.stdin.flush()

    def send(self, do: str) -> None:
        """Tell every process to ``enrol`` or ``attach`` its agents."""
        for proc in self.procs:
            self._send(proc, {"do": do})

    def _read(self, out: IO[bytes] | None) -> None:
        assert out is not None
        for line in out:
            event = json.loads(line)
            with self.lock:
                self.events.take(event)

    def wait(self, cond: Callable[[Events], bool], timeout: float, what: str) -> None:
        """Until ``cond(events)`` holds; RuntimeError after ``timeout`` or if a process died."""
        deadline = time.monotonic() + timeout
        while True:
            with self.lock:
                if cond(self.events):
                    return
            dead = [p.pid for p in self.procs if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{what}: simulator process(es) {dead} ended (agents-K.log)")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: not within {timeout:.0f}s")
            time.sleep(0.1)

    def cpu_s(self) -> float:
        """CPU seconds the simulator processes have used so far."""
        import psutil

        total = 0.0
        for p in self.procs:
            try:
                t = psutil.Process(p.pid).cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += t.user + t.system
        return total

    def stop(self) -> None:
        """End every process (its standard input first; then SIGTERM, SIGKILL)."""
        for proc in self.procs:
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        deadline = time.monotonic() + 20.0
        for proc in self.procs:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(max(0.1, deadline - time.monotonic()))
        terminate(self.procs, 5.0)
        for reader in self._readers:
            reader.join(5.0)
        for proc in self.procs:
            if proc.stdout is not None:
                proc.stdout.close()
