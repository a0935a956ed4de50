"""The instance processes of one container: start them, watch them, restart or report the dead.

``Supervisor`` owns one OS process per local task (or, in the small
footprint, one thread: ``_threads.InstanceThread``). The container looks at
them every 0.1 s (``check``). At-most-once and at-least-once: a dead instance
is restarted alone, after a delay drawn from its own ``Backoff`` (reset once
it has been up and connected for ``HEALTHY_AFTER_S``). Exactly-once: a dead
instance stays dead and is returned at every look until a restore replaces
every process; the container asks its topology master for the rollback.

An instance whose gateway stopped beating (SIGSTOP, a hang) is killed, so it
is then handled as a dead one. All methods run on the container's event loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from .._clock import SYSTEM_CLOCK, Clock
from .._retry import Backoff, RetryPolicy
from ._procs import Proc
from ._stmgr import StreamManager

log = logging.getLogger("headwater.container")

# full jitter from 0.25 s: the first restart within a quarter second, later ones up to 5 s
RESTART_POLICY = RetryPolicy(initial=0.25, maximum=5.0)
HEALTHY_AFTER_S = 10.0  # up and connected this long: the next crash starts the backoff anew
SILENT_AFTER_S = 6.0  # an instance's gateway beats every second: stopped or hung past this

Launch = Callable[[int], Proc]


class Supervisor:
    def __init__(
        self,
        launch: Launch,
        stmgr: StreamManager,
        *,
        restart: bool,
        clock: Clock = SYSTEM_CLOCK,
        policy: RetryPolicy = RESTART_POLICY,
    ) -> None:
        self._launch = launch
        self._stmgr = stmgr
        self._restart = restart  # False: a dead task waits for a rollback
        self._clock = clock
        self._policy = policy
        self.procs: dict[int, Proc] = {}
        self.last_error: dict[int, str] = {}  # task -> its last exception, for failure reports
        self._started_at: dict[int, float] = {}
        self._restart_at: dict[int, float] = {}
        self._backoff: dict[int, Backoff] = {}

    def start(self, task: int) -> None:
        self.procs[task] = self._launch(task)
        self._started_at[task] = self._clock.monotonic()

    def check(self) -> list[tuple[int, int | None]]:
        """One look at every instance: the dead ones to report, as (task, exit code).

        Restarting: each death is returned once, when its restart is scheduled, and the task
        starts again when that is due. Rolling back: every dead task, at every look.
        """
        now = self._clock.monotonic()
        self.kill_silent()
        dead: list[tuple[int, int | None]] = []
        for task, proc in list(self.procs.items()):
            if proc.poll() is None:
                continue
            if not self._restart:
                dead.append((task, proc.returncode))
            elif task not in self._restart_at:
                delay = self._backoff.setdefault(task, self._policy.start()).next_delay()
                self._restart_at[task] = now + delay
                self._stmgr.restarts[task] = self._stmgr.restarts.get(task, 0) + 1
                log.warning(
                    "task %d exited with %s; restarting in %.2fs", task, proc.returncode, delay
                )
                dead.append((task, proc.returncode))
            elif now >= self._restart_at[task]:
                del self._restart_at[task]
                self.start(task)
        for task, backoff in self._backoff.items():
            healthy = task in self._stmgr.conns and task not in self._restart_at
            if healthy and backoff.failures and now - self._started_at[task] >= HEALTHY_AFTER_S:
                backoff.reset()
        return dead

    def kill_silent(self) -> None:
        """Kill an instance whose heartbeats stopped (SIGSTOP, a hang): it is then restarted
        (or rolled back) as a dead one is."""
        for task, silent_s in self._stmgr.silent(SILENT_AFTER_S).items():
            proc = self.procs.get(task)
            if proc is None or proc.poll() is not None:
                continue
            log.warning(
                "task %d (pid %d) silent for %.1fs: stopped or hung; killing it",
                task,
                proc.pid,
                silent_s,
            )
            self.last_error[task] = f"silent for {silent_s:.0f}s (stopped or hung): killed"
            proc.kill()
            self._stmgr.conns[task].stale = True  # not silent twice

    def kill(self, tasks: Iterable[int], reason: str) -> list[int]:
        """Kill the instances of ``tasks`` this container runs (the health manager's restart
        of a slow instance): each is then restarted (or rolled back) as a dead one is.
        Returns the tasks killed."""
        killed = []
        for task in tasks:
            proc = self.procs.get(task)
            if proc is None or proc.poll() is not None:
                continue
            log.warning("task %d (pid %d) restarted on request: %s", task, proc.pid, reason)
            self.last_error[task] = f"restarted on request: {reason}"
            proc.kill()
            killed.append(task)
        return killed

    def failure_reason(self, task: int, code: int | None) -> str:
        """What to tell the master about ``task``'s death (its last exception, once)."""
        reason = f"task {task} exited with {code}"
        if task in self.last_error:
            reason += f" ({self.last_error.pop(task)})"
        return reason

    def take(self, tasks: Iterable[int]) -> list[Proc]:
        """Stop supervising ``tasks``: their processes, for the caller to terminate."""
        return [self.procs.pop(t) for t in tasks if t in self.procs]

    def kill_all(self) -> list[Proc]:
        """Kill every instance (a rollback) and return them, for the caller to reap."""
        procs = self.take(list(self.procs))
        for p in procs:
            if p.poll() is None:
                p.kill()
        return procs

    def pids(self) -> dict[int, int]:
        return {task: proc.pid for task, proc in self.procs.items()}
