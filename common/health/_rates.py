"""Rates from two samples: per task, then per component (DS2's true rates among them).

A task's counters are cumulative, so a rate is a difference over the interval between two
samples. The *true* processing rate is records processed per second of busy time (DS2):
what a task could process if it never waited, whatever the load it was given. A task that
is in one sample and not the other (started, stopped or rescaled away) is skipped for that
interval, and so is one whose counters went back (a restart not folded in yet).

A task whose busy time did not move at all over the interval sent no report in it: each
report adds at least the time of its loop's last turn, even idle. Its instance counts a
frame's records and busy time when the whole frame is done and reports between frames, so
a long frame (hundreds of records replayed after a rollback on a slow host: 14 s, seen with
real daemons), a stopped or a hung process reads as an idle task. Such a task is *silent*:
its rates are not known for that interval (``TaskRates.silent``).

A task's interval is read on its own clock (``uptime_ns``, reported with its counters) where
both samples have it: a sample reads each task's last report, which arrived 0 to 2 s before
(a task reports every second, its stream manager forwards every second, unsynchronised), so
over 5 s of the sampler's time a task's counters moved by 3 to 7 s worth; that aliasing read
a steady load as 80 +- 16 records/s and made DS2 overshoot by a task. Without it (an older
task), the interval between the samples is used.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

from ._model import Sample, TaskSample

_NS = 1e9
_MS = 1e3


@dataclass(frozen=True)
class TaskRates:
    """One task's rates over one interval (per second of wall time, fractions in 0..1)."""

    task: int
    component: str
    arrival: float  # tuples delivered to its input per second
    processed: float  # tuples executed per second
    emitted: float  # tuples emitted per second
    busy: float  # share of the interval spent processing
    backpressure: float  # share of the interval its own output was blocked
    busy_s: float  # seconds of busy time in the interval
    interval_s: float  # the interval it was measured over
    hot_keys: tuple[tuple[str, float], ...] = ()
    silent: bool = False  # no report in the interval: its rates are not known

    @property
    def true_processing(self) -> float | None:
        """Records processed per second of busy time; None without busy time."""
        return self.processed / self.busy if self.busy > 0 else None

    @property
    def true_output(self) -> float | None:
        """Records emitted per second of busy time; None without busy time."""
        return self.emitted / self.busy if self.busy > 0 else None

    @property
    def reported(self) -> bool:
        """Whether the task reported in the interval (it is not ``silent``)."""
        return not self.silent


@dataclass(frozen=True)
class ComponentRates:
    """A component's tasks' rates over one interval, and their aggregates."""

    component: str
    interval_s: float
    tasks: tuple[TaskRates, ...]

    @property
    def arrival(self) -> float:
        return sum(t.arrival for t in self.tasks)

    @property
    def processed(self) -> float:
        return sum(t.processed for t in self.tasks)

    @property
    def emitted(self) -> float:
        return sum(t.emitted for t in self.tasks)

    @property
    def busy(self) -> float:
        """The mean busy share of its tasks."""
        return statistics.fmean(t.busy for t in self.tasks) if self.tasks else 0.0

    @property
    def busy_max(self) -> float:
        return max((t.busy for t in self.tasks), default=0.0)

    @property
    def backpressure(self) -> float:
        """The largest share of the interval one of its tasks had its output blocked."""
        return max((t.backpressure for t in self.tasks), default=0.0)

    @property
    def true_processing(self) -> float | None:
        """Records one task processes per second of busy time (all its tasks' together)."""
        busy_s = sum(t.busy_s for t in self.tasks)
        done = sum(t.processed * t.interval_s for t in self.tasks)
        return done / busy_s if busy_s > 0 else None

    @property
    def true_output(self) -> float | None:
        """Records one task emits per second of busy time."""
        busy_s = sum(t.busy_s for t in self.tasks)
        done = sum(t.emitted * t.interval_s for t in self.tasks)
        return done / busy_s if busy_s > 0 else None

    @property
    def complete(self) -> bool:
        """Whether every task of the component reported in the interval."""
        return all(t.reported for t in self.tasks)

    @property
    def selectivity(self) -> float:
        """Records emitted per record processed (1 before anything was processed)."""
        return self.emitted / self.processed if self.processed > 0 else 1.0


def task_rates(before: TaskSample, after: TaskSample, interval_s: float) -> TaskRates | None:
    """The rates between two readings of one task; None if they cannot be compared.

    ``interval_s`` is the time between the samples, unless both readings were taken at times
    of their own (an agent's reports: ``at``); the task's own clock's, where both readings
    have it, replaces it. A task whose clock did not move sent no report in between: it is
    silent, with no rates known."""
    if before.at is not None and after.at is not None:
        interval_s = after.at - before.at
    if interval_s <= 0 or before.component != after.component:
        return None
    silent = after.busy_ns == before.busy_ns
    if before.uptime_ns > 0 and after.uptime_ns > 0:
        own_s = (after.uptime_ns - before.uptime_ns) / _NS
        if own_s < 0:
            return None  # a clock that went back: a restart
        silent = own_s == 0
        interval_s = own_s or interval_s
    pairs = (
        (before.received, after.received),
        (before.executed, after.executed),
        (before.emitted, after.emitted),
        (before.busy_ns, after.busy_ns),
        (before.backpressure_ms, after.backpressure_ms),
    )
    if any(b > a for b, a in pairs):
        return None  # counters never go back: a restart not folded in yet
    busy_s = min((after.busy_ns - before.busy_ns) / _NS, interval_s)
    held_s = (after.backpressure_ms - before.backpressure_ms) / _MS
    return TaskRates(
        task=after.task,
        component=after.component,
        arrival=(after.received - before.received) / interval_s,
        processed=(after.executed - before.executed) / interval_s,
        emitted=(after.emitted - before.emitted) / interval_s,
        busy=busy_s / interval_s,
        backpressure=min(held_s / interval_s, 1.0),
        busy_s=busy_s,
        interval_s=interval_s,
        hot_keys=after.hot_keys,
        silent=silent,
    )


def rates(before: Sample, after: Sample) -> dict[str, ComponentRates]:
    """Each component's rates between two samples of a topology (tasks in both only)."""
    interval_s = after.at - before.at
    per: dict[str, list[TaskRates]] = {name: [] for name in after.components}
    if interval_s <= 0:
        return {}
    for task, now in sorted(after.tasks.items()):
        then = before.tasks.get(task)
        if then is None or now.component not in per:
            continue
        r = task_rates(then, now, interval_s)
        if r is not None:
            per[now.component].append(r)
    return {name: ComponentRates(name, interval_s, tuple(ts)) for name, ts in per.items() if ts}
