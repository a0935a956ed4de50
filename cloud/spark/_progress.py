"""The progress of a long job, told in lines: its stage, rows, time spent and an estimate.

    [2/6] reading the landing ...
    [2/6] reading the landing: 1,530 rows in 4.1 s (23 s in all, about 40 s left)
    [3/6] fitting ... still running, 15 s (38 s in all, about 25 s left; Spark: 3/4 tasks)

A job names its stages up front, each with its share of a typical run (its
``weight``: measured, see bench/RESULTS.md), and wraps each in ``stage()``; the
estimate of what is left scales the time spent so far by the weight still to
come. While a stage runs, a heartbeat line every ``heartbeat_s`` says it still
runs (with ``detail()``, e.g. Spark's task counts), so that a watcher (a person,
or ``headwater demo`` reading the job's log) never sees silence it cannot read.
The lines go to ``write`` (``headwater spark train`` writes them to stderr: its
stdout keeps the figures). Nothing here knows what the job computes.

Thread-safety: ``stage()`` is for one thread (the job's); the heartbeat runs on
a daemon thread of its own and only writes lines.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

HEARTBEAT_S = 15.0


@dataclass
class Stage:
    """What a running stage has to say: its rows (None: not counted) and a note."""

    rows: int | None = None
    note: str = ""


class Progress:
    """Stage by stage progress lines of one run (see the module doc).

    ``stages``: (name, weight) in the order they run; a stage may be skipped (its
    weight then counts as done when a later one starts). ``write``: one line at a
    time, None for a silent run. ``clock`` and ``heartbeat_s`` are for tests.
    """

    def __init__(
        self,
        stages: Sequence[tuple[str, float]],
        write: Callable[[str], None] | None,
        *,
        detail: Callable[[], str] | None = None,
        clock: Callable[[], float] = time.monotonic,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self.names = [name for name, _ in stages]
        self.weights = [weight for _, weight in stages]
        self.write, self.detail, self.clock = write, detail, clock
        self.heartbeat_s = heartbeat_s
        self.began = clock()
        self._done = 0  # stages finished or skipped
        self._lock = threading.Lock()

    def _line(self, text: str) -> None:
        if self.write is not None:
            with self._lock:
                self.write(text)

    def _tag(self, index: int) -> str:
        return f"[{index + 1}/{len(self.names)}] {self.names[index]}"

    def _left(self, spent: float) -> str:
        """``about N s left``, from the time ``spent`` and the weight still to come."""
        done = sum(self.weights[: self._done])
        todo = sum(self.weights[self._done :])
        if done <= 0 or spent <= 0:
            return ""
        left = spent * todo / done
        return f", about {_seconds(left)} left" if left >= 0.5 else ""

    @contextmanager
    def stage(self, name: str) -> Iterator[Stage]:
        """Run the body as stage ``name``: a line as it starts, heartbeats while it runs, and
        a line with its rows and time when it ends (none if it raises: the job says why)."""
        index = self.names.index(name)
        self._done = max(self._done, index)
        started = self.clock()
        self._line(f"{self._tag(index)} ...")
        state = Stage()
        stop = threading.Event()
        beat = None
        if self.write is not None and self.heartbeat_s > 0:
            beat = threading.Thread(
                target=self._beat, args=(index, started, stop), daemon=True, name="progress"
            )
            beat.start()
        try:
            yield state
        finally:
            stop.set()
            if beat is not None:
                beat.join()
        now = self.clock()
        self._done = index + 1
        rows = "" if state.rows is None else f"{state.rows:,} rows "
        note = f" {state.note}" if state.note else ""
        self._line(
            f"{self._tag(index)}: {rows}in {_seconds(now - started)}{note} "
            f"({_seconds(now - self.began)} in all{self._left(now - self.began)})"
        )

    def _beat(self, index: int, started: float, stop: threading.Event) -> None:
        while not stop.wait(self.heartbeat_s):
            now = self.clock()
            # the estimate counts this stage as half done: better than none while it runs
            spent = now - self.began
            done = sum(self.weights[:index]) + self.weights[index] / 2
            todo = sum(self.weights[index:]) - self.weights[index] / 2
            left = f", about {_seconds(spent * todo / done)} left" if done > 0 else ""
            try:
                more = self.detail() if self.detail is not None else ""
            except Exception:  # a detail is a nicety: never let it end the heartbeat
                more = ""
            self._line(
                f"{self._tag(index)} ... still running, {_seconds(now - started)} "
                f"({_seconds(spent)} in all{left}{f'; {more}' if more else ''})"
            )

    def elapsed(self) -> float:
        """Seconds since the run began."""
        return self.clock() - self.began


def _seconds(s: float) -> str:
    """``4.1 s`` under a minute, ``75 s`` under ten, ``12 min`` beyond."""
    if s < 60:
        return f"{s:.1f} s"
    if s < 600:
        return f"{s:.0f} s"
    return f"{s / 60:.0f} min"


def spark_tasks(spark: SparkSession) -> Callable[[], str]:
    """A heartbeat's detail: the tasks done of Spark's running stages (``Spark: 3/4 tasks``)."""
    tracker = spark.sparkContext.statusTracker()

    def detail() -> str:
        infos = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        running = [i for i in infos if i is not None]
        if not running:
            return ""
        done = sum(i.numCompletedTasks for i in running)
        return f"Spark: {done}/{sum(i.numTasks for i in running)} tasks"

    return detail
