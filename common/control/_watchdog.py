"""What a topology master (tmaster) says about itself when progress stops: how long, and why.

A topology stuck in a state (``RESTORING`` that never ends, a checkpoint
that never completes) loses nothing, so nothing else would ever show it.
The watchdog reads its topology master and says:

- how long the topology has been in its state, and what it waits for: the
  containers that have not registered or restored, the tasks not connected,
  the tasks whose snapshot a checkpoint still lacks, a rollback held back;
- which components (or containers) are crash-looping, with the last
  exception and its traceback (``CrashLoopDetector``);
- whether checkpoints are failing (several in a row failed, or none has
  completed for a long time while the topology runs).

The topology master's summary and metrics carry ``status`` (``view``), which
``headwater status`` and ``headwater run`` print. Given a node's ``Health``
(an agent hosts the topology master of its edge subgraph), the watchdog
keeps the node's reasons for this topology in step (``tick``):
a crash loop is ``failed``; a stuck state or failing checkpoints ``degraded``.

The watchdog reads its topology master through ``WatchedMaster``, a Protocol
of what it needs here, which ``TopologyMaster`` satisfies.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from .._clock import SYSTEM_CLOCK, Clock
from .._health import DEGRADED, FAILED, Health, Level
from ..wire._states import CheckpointState, TopologyState
from ._crashloop import DEFAULT_POLICY, CrashLoop, CrashLoopDetector, CrashLoopPolicy

if TYPE_CHECKING:
    from ..api import Topology
    from ..plan import PhysicalPlan
    from ..wire.proto import runtime_pb2 as pb
    from ._catalogue import Catalogue
    from ._checkpoints import CheckpointCoordinator
    from ._recovery import Recovery

log = logging.getLogger("headwater.tmaster")
OFFLINE_AFTER_S = 5.0  # a container silent this long is named
STUCK_AFTER_S = 15.0  # RESTORING, or a checkpoint in flight, this long: degraded
FAILING_IN_A_ROW = 3  # checkpoints failed in a row: degraded
LISTED = 5  # tasks named in one reason, at most


class WatchedMaster(Protocol):
    """What the watchdog reads of its topology master (``TopologyMaster`` is one)."""

    @property
    def topology(self) -> Topology: ...
    @property
    def plan(self) -> PhysicalPlan: ...
    @property
    def state(self) -> TopologyState: ...
    @property
    def exactly_once(self) -> bool: ...
    @property
    def containers(self) -> Mapping[int, pb.ContainerInfo]: ...
    @property
    def last_heartbeat(self) -> Mapping[int, float]: ...
    @property
    def metrics(self) -> Mapping[str, Mapping[str, float]]: ...
    @property
    def exceptions(self) -> Sequence[dict[str, Any]]: ...
    @property
    def recovery(self) -> Recovery: ...
    @property
    def checkpoints(self) -> CheckpointCoordinator: ...
    @property
    def catalogue(self) -> Catalogue: ...


class Watchdog:
    """Diagnoses one topology master. Runs on its event loop only."""

    def __init__(
        self,
        tm: WatchedMaster,
        *,
        policy: CrashLoopPolicy = DEFAULT_POLICY,
        health: Health | None = None,
        stuck_after_s: float = STUCK_AFTER_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.tm = tm
        self.crash_loops = CrashLoopDetector(policy, clock)
        self.health = health
        self.stuck_after_s = stuck_after_s
        self.clock = clock
        self._state = ""
        self._since = clock.monotonic()
        self._keys: set[str] = set()  # the health reasons set for this topology
        self._last: dict[str, tuple[str, int]] = {}  # crash loop key -> (component, task)
        self._announced: set[str] = set()  # crash loops logged

    # -- events from the topology master ---------------------------------------------------------
    def observe(self) -> None:
        """Note the topology's state (called where it may change, and on every tick)."""
        state = self.tm.state
        if state != self._state:
            self._state, self._since = state, self.clock.monotonic()

    def failed(self, task: int, container: int, reason: str) -> CrashLoop | None:
        """An instance (``task``, 0 if none) or a container died; count it for crash loops."""
        ids = {i.task_id: i for i in self.tm.plan.instances}
        inst = ids.get(task)
        if inst is not None:  # per task: one event killing many tasks at once is no loop
            key = f"component {inst.component!r} (task {task})"
            self._last[key] = (inst.component, task)
        else:
            key = f"container {container}"
        loop = self.crash_loops.failed(key, reason)
        if loop is not None and key not in self._announced:  # once per loop, not per failure
            log.error("%s: %s; last: %s", self.tm.topology.name, loop.describe(), reason)
        self._announced = set(self.crash_loops.loops())
        return loop

    # -- views ----------------------------------------------------------------------------
    def view(self) -> dict[str, Any]:
        """``status`` in the topology master's summary and metrics."""
        self.observe()
        loops = [self._loop_view(loop) for loop in self.crash_loops.loops().values()]
        faults = self.faults()
        return {
            "state": self._state,
            "for_s": round(self.clock.monotonic() - self._since, 1),
            "waiting_for": self.waiting_for(),
            "crash_loops": loops,
            "health": max((lv for _, lv, _ in faults), default=Level.OK).label,
            "reasons": [f"{key}: {message}" for key, _, message in faults],
        }

    def waiting_for(self, timed: bool = True) -> list[str]:
        """What the topology waits for now (empty when nothing holds it).

        ``timed=False`` leaves out the durations, so a node's health reason stays the
        same while the fault lasts (it is logged when it changes)."""
        tm, now = self.tm, self.clock.monotonic()

        def took(seconds: float, fmt: str = ".0f") -> str:
            return f" for {seconds:{fmt}}s" if timed else ""

        out: list[str] = []
        expected = range(tm.plan.containers)
        missing = [c for c in expected if c not in tm.containers]
        if missing:
            out.append(f"containers {missing} have not registered with the topology master")
        silent = [
            c
            for c in expected
            if c in tm.containers and now - tm.last_heartbeat.get(c, 0.0) > OFFLINE_AFTER_S
        ]
        for c in silent:
            silence = (
                took(now - tm.last_heartbeat.get(c, 0.0)) or f" for over {OFFLINE_AFTER_S:.0f}s"
            )
            out.append(f"container {c} has sent no heartbeat{silence}")
        r = tm.recovery.restoring
        if r is not None:
            if tm.recovery.held_until > now:
                more = f" {tm.recovery.held_until - now:.1f}s more" if timed else ""
                out.append(
                    f"a rollback held back{more}: it keeps failing (see crash loops "
                    "and /exceptions)"
                )
            else:
                for c in expected:
                    if c in tm.containers and c not in tm.recovery.restored:
                        tasks = self._unconnected(c)
                        out.append(
                            f"container {c} has not restored checkpoint "
                            f"{r.checkpoint_id} (epoch {r.epoch})"
                            + (f": {tasks} not connected" if tasks else "")
                        )
        rec = tm.checkpoints.in_flight
        if rec is not None and now - rec._t0 > max(2 * tm.checkpoints.interval_s, 2.0):
            lacking = [i for i in tm.plan.instances if i.task_id not in rec.acked]
            names = ", ".join(
                f"{i.task_id} ({i.component}, container {i.container})" for i in lacking[:LISTED]
            )
            more = f" and {len(lacking) - LISTED} more" if len(lacking) > LISTED else ""
            out.append(
                f"checkpoint {rec.id} in flight{took(now - rec._t0)}: no snapshot "
                f"yet from tasks {names}{more}"
            )
        return out

    def faults(self) -> list[tuple[str, Level, str]]:
        """(key, level, message) per fault of this topology, for a node's health."""
        tm, now = self.tm, self.clock.monotonic()
        name, policy = tm.topology.name, self.crash_loops.policy
        out: list[tuple[str, Level, str]] = []
        for loop in self.crash_loops.loops().values():
            out.append(
                (
                    f"{name}: crash loop: {loop.key}",
                    FAILED,
                    f"failing again and again ({policy.failures} failures within "
                    f"{policy.window_s:.0f}s); last: {loop.reason}",
                )
            )
        self.observe()
        stuck_for = now - self._since
        if self._state == TopologyState.RESTORING and stuck_for > self.stuck_after_s:
            why = "; ".join(self.waiting_for(timed=False)) or "no reason known"
            out.append(
                (f"{name}: stuck", DEGRADED, f"RESTORING for over {self.stuck_after_s:.0f}s: {why}")
            )
        failing = self._checkpoints_failing(now)
        if failing:
            out.append((f"{name}: checkpoints failing", DEGRADED, failing))
        return out

    def tick(self) -> None:
        """Bring the node's health in step with this topology's faults."""
        if self.health is None:
            return
        keys = set()
        for key, level, message in self.faults():
            self.health.set(key, level, message)
            keys.add(key)
        for key in self._keys - keys:
            self.health.clear(key)
        self._keys = keys

    def close(self) -> None:
        """The topology is gone from this node: clear its reasons."""
        if self.health is not None:
            for key in self._keys:
                self.health.clear(key)
        self._keys = set()

    # -- helpers ----------------------------------------------------------------------------
    def _unconnected(self, container: int) -> str:
        tm = self.tm
        tasks = [
            i
            for i in tm.plan.in_container(container)
            if tm.metrics.get(f"task:{i.task_id}", {}).get("connected") != 1.0
        ]
        return ", ".join(f"task {i.task_id} ({i.component})" for i in tasks[:LISTED])

    def _checkpoints_failing(self, now: float) -> str:
        tm = self.tm
        if not tm.exactly_once or tm.state is not TopologyState.RUNNING:
            return ""
        tail = [c for c in tm.catalogue.checkpoints if c.state != CheckpointState.IN_PROGRESS][
            -FAILING_IN_A_ROW:
        ]
        if len(tail) == FAILING_IN_A_ROW and all(c.state != CheckpointState.COMPLETE for c in tail):
            why = "; ".join(self.waiting_for(timed=False))
            ids = ", ".join(str(c.id) for c in tail)
            return f"the last {FAILING_IN_A_ROW} checkpoints failed ({ids})" + (
                f"; {why}" if why else ""
            )
        rec = tm.checkpoints.in_flight
        if rec is not None and now - rec._t0 > self.stuck_after_s:
            return "; ".join(self.waiting_for(timed=False))
        return ""

    def _loop_view(self, loop: CrashLoop) -> dict[str, Any]:
        """A crash loop with the last exception of its component (if it raised one)."""
        d: dict[str, Any] = {
            "key": loop.key,
            "failures": loop.failures,
            "over_s": round(loop.over_s, 1),
            "reason": loop.reason,
            "component": "",
            "task": None,
            "exception": "",
            "traceback": "",
        }
        if loop.key in self._last:
            component, task = self._last[loop.key]
            d.update(component=component, task=task)
            for e in reversed(self.tm.exceptions):
                # a dead letter is listed beside exceptions, and is no cause of a crash
                if e["task"] == task and not e["message"].startswith("dead letter"):
                    d.update(task=e["task"], exception=e["message"], traceback=e["traceback"])
                    break
        return d
