"""Crash loops: something that keeps failing however often it is restarted.

A *failure* is one death of what a supervisor restarts: an instance (an
exception in user code, an exit, a kill), a container process, a topology
master. Restarting is the right answer to one failure; it is the wrong
answer to the same failure over and over (a constructor that raises, a
model file that is missing, a record that crashes every replay). A *crash
loop* is ``failures`` failures of one thing (a task, not a whole component:
one event that kills many tasks at once is not a loop) within ``window_s``
seconds;
it ends by itself once failures stop for a whole window.

Who acts on one:

- the topology master (tmaster) counts failures per task (and per container),
  lists crash loops in its summary and its health, and keeps rolling back
  (with backoff) in case the cause goes away;
- ``headwater run`` stops: it prints the cause and exits non-zero;
- a node daemon (a worker or an agent) reports it in its health (``failed``) while it lasts.

>>> from headwater.common._clock import ManualClock
>>> clock = ManualClock()
>>> d = CrashLoopDetector(CrashLoopPolicy(failures=3, window_s=10), clock=clock)
>>> d.failed("broken", "exit 1"), d.failed("broken", "exit 1")
(None, None)
>>> d.failed("broken", "exit 1").failures
3
>>> clock.advance(20.0)
>>> d.loops()
{}
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from .._clock import SYSTEM_CLOCK, Clock
from .._health import FAILED, Health


@dataclass(frozen=True)
class CrashLoopPolicy:
    """``failures`` failures of one thing within ``window_s`` seconds make a crash loop.

    The defaults let a crash or two (a kill, a bad deploy fixed at once) be
    restarted quietly, and name a component that cannot start within seconds:
    an instance restarts after 0, 0.25, 0.5, 1 s and a rollback is immediate
    for the first three, so five failures take a few seconds.
    """

    failures: int = 5
    window_s: float = 60.0


DEFAULT_POLICY = CrashLoopPolicy()


@dataclass(frozen=True)
class CrashLoop:
    """One thing crash-looping: how often, over how long, and the last failure's reason."""

    key: str
    failures: int  # within the window
    over_s: float  # from the first to the last of them
    reason: str  # the last failure's

    def describe(self) -> str:
        return f"{self.key} is crash-looping: {self.failures} failures in {self.over_s:.0f}s"


class CrashLoopDetector:
    """Counts failures per key within the policy's window. Not threadsafe: one owner."""

    def __init__(
        self, policy: CrashLoopPolicy = CrashLoopPolicy(), clock: Clock = SYSTEM_CLOCK
    ) -> None:
        self.policy = policy
        self.clock = clock
        self._failures: dict[str, deque[float]] = {}
        self._reasons: dict[str, str] = {}

    def failed(self, key: str, reason: str) -> CrashLoop | None:
        """Count a failure of ``key``; the crash loop it is now in, if any."""
        now = self.clock.monotonic()
        times = self._failures.setdefault(key, deque(maxlen=self.policy.failures))
        times.append(now)
        self._reasons[key] = reason
        return self._loop(key, now)

    def loops(self) -> dict[str, CrashLoop]:
        """Every key crash-looping now."""
        now = self.clock.monotonic()
        out = {}
        for key in list(self._failures):
            loop = self._loop(key, now)
            if loop is not None:
                out[key] = loop
            elif now - self._failures[key][-1] > self.policy.window_s:
                del self._failures[key], self._reasons[key]  # bounded: old keys go
        return out

    def _loop(self, key: str, now: float) -> CrashLoop | None:
        times = self._failures[key]
        window = self.policy.window_s
        if len(times) < self.policy.failures or times[-1] - times[0] > window:
            return None
        if now - times[-1] > window:  # quiet for a whole window: over
            return None
        return CrashLoop(key, len(times), times[-1] - times[0], self._reasons[key])


class CrashLoopWatch:
    """Reports the crash loops of what a node restarts in its ``Health`` (``failed``).

    Call ``failed`` on every restart and ``tick`` now and then (a loop that
    ended clears its reason). The reason's key is ``crash loop: KEY``.
    """

    def __init__(
        self,
        health: Health,
        policy: CrashLoopPolicy = CrashLoopPolicy(),
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.health = health
        self.detector = CrashLoopDetector(policy, clock)
        self._reported: set[str] = set()

    def failed(self, key: str, reason: str) -> None:
        loop = self.detector.failed(key, reason)
        if loop is not None:
            policy = self.detector.policy  # no changing figures: logged once while it lasts
            message = (
                f"failing again and again ({policy.failures} failures within "
                f"{policy.window_s:.0f}s); last: {reason}"
            )
            self.health.set(f"crash loop: {key}", FAILED, message)
            self._reported.add(key)

    def forget(self, key: str) -> None:
        """``key`` is gone for good (a job killed): its failures and its crash loop too."""
        self.detector._failures.pop(key, None)
        self.detector._reasons.pop(key, None)
        if key in self._reported:
            self.health.clear(f"crash loop: {key}")
            self._reported.discard(key)

    def tick(self) -> None:
        for key in self._reported - set(self.detector.loops()):
            self.health.clear(f"crash loop: {key}")
            self._reported.discard(key)
