"""A short history of what moves in each topology: per component and per task, over 15 minutes.

Every ``TICK_S`` seconds the history takes each topology's counters (executed, emitted,
backpressure ms, dead letters, exceptions: cumulative as the containers and agents report
them) and gauges (execute latency, queue), turns the counters into increments since the
last sample (robust to a counter that starts again from 0 when a task or an agent
restarts: what it counted since is the increment, nothing is lost and nothing goes
negative), and appends them to fixed-size rings (``Series``: ``array`` buffers, 8 bytes
of time and 7 x 4 bytes of figures per sample, allocated once), one per component (a
cloud component's tasks summed; an edge component's agents summed) and one per cloud
task. ``_history_query.py`` reads them back as rates over a window.

A sample is stamped with when its counts were reported (the task's container's last
heartbeat, an agent's last status report; a component's: its sources' mean), not when the
history took it, and a source whose report has not moved since the last tick adds
nothing: a rate is a counter's growth over the time the reports say it took, not the
jitter between heartbeats and ticks (the console's old two-snapshot rates read a steady
60/s as 40 to 90).

A topology's history is forgotten when it is killed (no longer in the mapping handed to
``tick``), and made anew if a topology of the same name is submitted again. Cost: one
pass over each topology's tasks and agents per tick. Memory: ``Series.BYTES_PER_SAMPLE``
x ``capacity`` per component and per task; docs/design.md, "The web console", gives the
figures.
"""

from __future__ import annotations

import asyncio
import logging
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import NamedTuple

from headwater.common._clock import SYSTEM_CLOCK, Clock
from headwater.common.control import TopologyMaster

log = logging.getLogger("headwater.console")

TICK_S = 2.0
"""How often the history samples: heartbeats come every second, agents' reports every 2."""
WINDOW_S = 900.0
"""How far back it reaches (15 minutes)."""
COUNTERS = ("executed", "emitted", "backpressure_ms", "dead_letters", "exceptions")
"""Kept as increments, served as rates per second."""
GAUGES = ("latency_us", "pending")
"""Kept as reported (a component's latency: its slowest task's; its queue: the sum)."""
FIELDS = COUNTERS + GAUGES
_ZERO = (0.0,) * len(COUNTERS)


class Source(NamedTuple):
    """One reporter of a component's figures: a cloud task, or an edge component on one
    agent. ``key`` stays the same across its restarts; ``time`` is when it reported."""

    key: object
    component: str
    task: str | None  # the cloud task's id, or None (an edge component on an agent)
    time: float
    counters: tuple[float, ...]  # COUNTERS, cumulative
    gauges: tuple[float, float]  # GAUGES


EdgeSources = Callable[[str], Iterable[Source]]
"""The edge sources of a topology (by name): each agent's figures of its edge components."""


class Series:
    """A ring of samples: a time (monotonic seconds) and the figures of ``FIELDS``."""

    BYTES_PER_SAMPLE = 8 + 4 * len(FIELDS)
    __slots__ = ("capacity", "size", "sources", "start", "times", "values")

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.times = array("d", bytes(8 * capacity))
        self.values = array("f", bytes(4 * len(FIELDS) * capacity))
        self.start = 0
        self.size = 0
        self.sources = 0  # how many tasks (or agents) its newest sample summed

    def append(self, time: float, values: Iterable[float]) -> None:
        i = (self.start + self.size) % self.capacity
        if self.size < self.capacity:
            self.size += 1
        else:
            self.start = (self.start + 1) % self.capacity
        self.times[i] = time
        n = len(FIELDS)
        for k, v in enumerate(values):
            self.values[i * n + k] = v

    def last_time(self) -> float | None:
        if not self.size:
            return None
        return self.times[(self.start + self.size - 1) % self.capacity]

    def since(self, t0: float) -> Iterator[tuple[float, tuple[float, ...]]]:
        """(time, figures) of the samples at or after ``t0``, oldest first."""
        times, columns = self.ordered()
        for j in range(bisect_left(times, t0), len(times)):
            yield times[j], tuple(c[j] for c in columns)

    def newest(self, t0: float) -> list[tuple[float, tuple[float, ...]]]:
        """``since(t0)`` read from the newest end: costs the samples after ``t0`` alone."""
        n, out = len(FIELDS), []
        for j in range(self.size - 1, -1, -1):
            i = (self.start + j) % self.capacity
            if self.times[i] < t0:
                break
            out.append((self.times[i], tuple(self.values[i * n : (i + 1) * n])))
        return out[::-1]

    def ordered(self) -> tuple[array[float], list[array[float]]]:
        """The times and each field's column, oldest first (copies: C-speed slices)."""
        n, cut, size = len(FIELDS), self.start, self.size
        if size < self.capacity:
            return self.times[:size], [self.values[k::n][:size] for k in range(n)]
        columns = [self.values[k::n] for k in range(n)]
        return self.times[cut:] + self.times[:cut], [c[cut:] + c[:cut] for c in columns]

    def nbytes(self) -> int:
        return self.times.itemsize * len(self.times) + self.values.itemsize * len(self.values)


class TopologyHistory:
    """The series of one topology, and what each source last reported."""

    def __init__(self, tm: TopologyMaster | None, capacity: int) -> None:
        self.tm = tm  # the topology master sampled: another one of the same name starts anew
        self.capacity = capacity
        self.components: dict[str, Series] = {}
        self.tasks: dict[str, Series] = {}
        self.edge: set[str] = set()  # the components whose sources are agents
        self._last: dict[object, tuple[float, tuple[float, ...]]] = {}  # key -> (time, counters)

    def record(self, sources: Iterable[Source]) -> None:
        """One tick: each source's increments since its last report, summed per component."""
        groups: dict[str, list[float]] = {}  # component -> [time sum, n, moved, incs..., gauges]
        seen: set[object] = set()
        tasks: set[str] = set()
        width = len(COUNTERS)
        for s in sources:
            seen.add(s.key)
            last = self._last.get(s.key)
            moved = last is not None and s.time > last[0]
            if last is None:  # first seen: its counts so far are a baseline
                incs = _ZERO
            elif moved:
                incs = tuple(
                    c - p if c >= p else c  # lower: it started again from 0
                    for c, p in zip(s.counters, last[1], strict=True)
                )
            else:
                incs = _ZERO
            if last is None or moved:
                self._last[s.key] = (s.time, s.counters)
            g = groups.get(s.component)
            if g is None:
                g = groups[s.component] = [0.0] * (3 + len(FIELDS))
            g[0] += s.time
            g[1] += 1
            if moved:
                g[2] = 1.0
            for k in range(width):
                g[3 + k] += incs[k]
            g[3 + width] = max(g[3 + width], s.gauges[0])
            g[4 + width] += s.gauges[1]
            if s.task is None:
                self.edge.add(s.component)
                continue
            tasks.add(s.task)
            if moved:
                self._series(self.tasks, s.task).append(s.time, (*incs, *s.gauges))
        for key in [k for k in self._last if k not in seen]:
            del self._last[key]  # a task gone (an edit) or an agent no longer running it
        for task in [t for t in self.tasks if t not in tasks]:
            del self.tasks[task]  # a task no longer in the plan
        for component, g in groups.items():
            series = self._series(self.components, component)
            series.sources = int(g[1])
            if g[2]:
                series.append(g[0] / g[1], g[3:])

    def _series(self, where: dict[str, Series], name: str) -> Series:
        s = where.get(name)
        if s is None:
            s = where[name] = Series(self.capacity)
        return s

    def nbytes(self) -> int:
        return sum(s.nbytes() for s in (*self.components.values(), *self.tasks.values()))


def cloud_sources(tm: TopologyMaster) -> Iterator[Source]:
    """The cloud tasks of ``tm``'s plan that have reported, as sources."""
    beats = tm.last_heartbeat
    for inst in tm.plan.instances:
        m = tm.metrics.get(f"task:{inst.task_id}")
        if m is None:
            continue
        when = beats.get(inst.container)
        task = str(inst.task_id)
        yield Source(
            ("task", task),
            inst.component,
            task,
            tm.clock.monotonic() if when is None else when,
            tuple(m.get(k, 0.0) for k in COUNTERS),
            (m.get("execute_latency_us", 0.0), m.get("pending", 0.0)),
        )


class History:
    """Every topology's history; ``tick`` samples them all (``run``: every ``tick_s``)."""

    def __init__(
        self,
        topologies: Callable[[], Mapping[str, TopologyMaster]],
        edge: EdgeSources = lambda name: (),
        *,
        tick_s: float = TICK_S,
        window_s: float = WINDOW_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.topologies = topologies
        self.edge = edge
        self.tick_s = tick_s
        self.window_s = window_s
        self.clock = clock
        self.capacity = int(window_s / tick_s) + 1
        self.of: dict[str, TopologyHistory] = {}

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.tick_s)
            try:
                self.tick()
            except Exception:  # the history is for people; it never stops the server
                log.exception("the console's history failed to sample")

    def tick(self) -> None:
        tms = self.topologies()
        for name in [n for n, h in self.of.items() if tms.get(n) is not h.tm]:
            del self.of[name]  # killed (or killed and submitted again): forgotten
        for name, tm in tms.items():
            h = self.of.get(name)
            if h is None:
                h = self.of[name] = TopologyHistory(tm, self.capacity)
            try:
                h.record([*cloud_sources(tm), *self.edge(name)])
            except Exception:  # one topology's failure stops no other's sample
                log.exception("the console's history failed to sample %s", name)

    def record(self, name: str, sources: Iterable[Source]) -> None:
        """Sample one topology from ``sources`` (tests; ``tick`` reads topology masters)."""
        h = self.of.get(name)
        if h is None:
            h = self.of[name] = TopologyHistory(None, self.capacity)
        h.record(sources)

    def nbytes(self) -> int:
        """The rings' memory, all topologies (the per-source last counts are besides)."""
        return sum(h.nbytes() for h in self.of.values())
