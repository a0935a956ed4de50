"""A node's container processes: started as ordered, restarted when they die, killed when silent.

A node starts one process per container it is ordered to run (``python -m
MODULE`` with the container's topology file, its topology master, its domain
and this node's transport), in the container's folder of the workdir. The
supervisor restarts one that dies, at once the first time and then with
backoff (``RESTART``), while it is still ordered; its crash loops are said in
the node's health. A container touches its beat file every second: one silent
for ``SILENT_AFTER_S`` is killed, and so restarted.

What a container is started with (its module, its topology master, its domain,
its environment, how it is launched) the node says through ``ContainerHooks``,
which its subclasses override (an agent runs edge containers); a restart goes
through the node's own start, which an agent extends. This module never imports
the node: it is given the node's dicts, health and callbacks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from .._health import FAILED, Health
from .._retry import Backoff, RetryPolicy
from .._sandbox import RunAs
from ..control._crashloop import CrashLoopWatch
from ..runtime._procs import BeatWatch, Proc, beat_file, terminate
from ..security import Transport
from ..wire.proto import runtime_pb2 as pb

log = logging.getLogger("headwater.node")
SILENT_AFTER_S = 15.0  # a container touches its beat file every second
RESTART = RetryPolicy(initial=0.5, maximum=10.0, jitter=False)
"""A dead container's restarts after the first (which is at once): 0.5 s, 1 s, ... 10 s."""

Key = tuple[str, int]
"""A container: its topology's name and its number."""


class ContainerHooks(Protocol):
    """What a container is started with: the node says (an agent runs edge containers)."""

    def container_module(self, run: pb.RunContainer) -> str: ...

    def container_run_as(self, run: pb.RunContainer) -> RunAs | None: ...

    def tmaster_address(self, run: pb.RunContainer) -> str: ...

    def container_domain(self, run: pb.RunContainer) -> list[str]: ...

    def container_env(self, run: pb.RunContainer) -> dict[str, str]: ...

    def launch_container(
        self, run: pb.RunContainer, args: list[str], env: dict[str, str], log_path: Path
    ) -> Proc: ...


class ContainerSupervisor:
    """The node's container processes: start, stop, and the supervision loop that restarts the
    dead and kills the silent."""

    def __init__(
        self,
        workdir: Path,
        host: str,
        transport: Transport,
        containers: dict[Key, Proc],
        orders: dict[Key, pb.RunContainer],
        health: Health,
        crash_loops: CrashLoopWatch,
        hooks: ContainerHooks,
        restart: Callable[[pb.RunContainer, Path], None],
        code_dir: Callable[[str], Path],
    ) -> None:
        self.workdir = workdir
        self.host = host  # where its containers' stream managers listen, and say they are
        self.transport = transport
        self.containers = containers  # the node's: the processes running
        self.orders = orders  # the node's: what the master ordered it to run
        self.health = health
        self.crash_loops = crash_loops
        self.hooks = hooks
        self.restart = restart  # the node's start (a subclass may do more first)
        self.code_dir = code_dir  # a package's folder in the workdir

    def start(self, run: pb.RunContainer, entry: Path) -> None:
        """Start the process of ``run``'s container, with the topology file ``entry``."""
        home = self.workdir / run.topology / f"container-{run.container}"
        home.mkdir(parents=True, exist_ok=True)
        run_as = self.hooks.container_run_as(run)
        if run_as is not None:  # its code finds its socket here, and lists nothing
            home.chmod(0o711)
        args = [
            "-m",
            self.hooks.container_module(run),
            "--topology-file",
            str(entry),
            "--container",
            str(run.container),
            "--containers",
            str(run.containers),
            "--tmaster",
            self.hooks.tmaster_address(run),
            "--workdir",
            str(home),
            "--state-dir",
            str(home / "state"),
            *self.hooks.container_domain(run),
            "--host",
            self.host,
            *self.transport.args(),
            *(["--run-as", run_as.arg()] if run_as is not None else []),
            # instances forked from one process that imported them (_forkserver.py), where
            # the container can: its own user's code, the normal footprint
            "--fork-instances",
        ]
        self.containers[(run.topology, run.container)] = self.hooks.launch_container(
            run, args, self.hooks.container_env(run), home / "container.log"
        )
        log.info("started container %d of %r", run.container, run.topology)

    async def stop(self, key: Key) -> None:
        """Forget the order for ``key`` and end its process (if it runs)."""
        self.orders.pop(key, None)
        proc = self.containers.pop(key, None)
        if proc is not None:
            await asyncio.get_running_loop().run_in_executor(None, terminate, [proc], 10.0)
            log.info("stopped container %d of %r", key[1], key[0])

    async def stop_all(self) -> None:
        """End every process (the node is stopping; the orders stay)."""
        procs = list(self.containers.values())
        self.containers.clear()
        await asyncio.get_running_loop().run_in_executor(None, terminate, procs, 10.0)

    async def run(self) -> None:
        """Restart dead containers (with backoff) and kill silent ones; never stops."""
        backoff: dict[Key, Backoff] = {}
        due: dict[Key, float] = {}  # a dead container's restart time (monotonic)
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
        key: Key,
        proc: Proc,
        beats: BeatWatch,
        backoff: dict[Key, Backoff],
        due: dict[Key, float],
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
        self.restart(run, self.code_dir(run.package) / run.entry)
        del due[key]
        self.health.clear(f"supervise:{key[0]}")
