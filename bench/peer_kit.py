"""What the peer runners of ``bench/peers.py`` share: the data, pacing, the start and end marks.

Every runner reads ``BENCH_DATA`` (msgpack batches), writes ``BENCH_OUT.start``
(wall clock) as it hands on the first record (with one feed per partition, the
first feed to start writes it and the others pace by it), and writes its results'
summary with the end time to ``BENCH_OUT`` once its sink holds ``BENCH_EXPECT``
records (Bytewax, one file per worker: ``BENCH_OUT.wN``, at the end of input).

``BENCH_RATE`` > 0 offers the records at that rate (records/s) instead of as
fast as possible: record ``i`` is due at ``t0 + i / rate``, ``t0`` being the
start mark, and the source hands on everything due whenever it is asked. The
sinks then also note when each result arrived (``BENCH_OUT.lat``, or
``.wN.lat``: the results' latency keys and arrival times), from which
``bench/peers.py`` computes end-to-end latency: arrival minus the due time of
the record that made the result computable (``arrival_index`` of the
workload's functions).

``BENCH_CHECKPOINTS`` > 0 runs Headwater exactly once with a checkpoint every
that many seconds. Here: the feed, and the Headwater source and sink;
``peer_bytewax`` has Bytewax's.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack

from headwater import Context, Reliability, Spout
from headwater.dsl import Op

DATA = os.environ.get("BENCH_DATA", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
EXPECT = int(os.environ.get("BENCH_EXPECT", "0"))
RATE = float(os.environ.get("BENCH_RATE", "0"))
CHECKPOINTS = float(os.environ.get("BENCH_CHECKPOINTS", "0"))
Summary = Callable[[list[Any]], dict[str, Any]]
LatencyKey = Callable[[Any], Any]

# the Headwater pipelines' configuration
CONFIG: dict[str, Any] = (
    {
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": CHECKPOINTS,
    }
    if CHECKPOINTS
    else {}
)


def read_batches(path: str | Path) -> Iterator[list[Any]]:
    with open(path, "rb") as f:
        yield from msgpack.Unpacker(f, raw=False, use_list=True)


class Feed:
    """The data's records: a whole batch per ``take`` (rate 0), or everything due by now.

    ``take`` returns None at the end of input, and an empty list when nothing is
    due yet (``due`` says when the next record is).
    """

    def __init__(self, path: str | Path = DATA, rate: float = RATE, skip: int = 0) -> None:
        self.batches = read_batches(path)
        self.rate = rate
        self.t0 = 0.0
        self.batch: list[Any] = []
        self.pos = 0  # within batch
        self.taken = 0  # records handed on, over all batches
        if skip:
            self._skip(skip)

    def _skip(self, n: int) -> None:
        """Resume after ``n`` records (a Headwater source restored from a checkpoint)."""
        while n:
            if self.pos == len(self.batch):
                self.batch, self.pos = next(self.batches, []), 0
                if not self.batch:
                    return
            step = min(n, len(self.batch) - self.pos)
            self.pos, self.taken, n = self.pos + step, self.taken + step, n - step

    def _start(self) -> None:
        self.t0 = time.time()
        mark = Path(OUT + ".start")
        try:  # the first to start marks it (one feed per partition: the earliest counts)
            with open(mark, "x") as f:
                f.write(repr(self.t0))
        except FileExistsError:  # and the others pace by it: record i is due at t0 + i / rate
            # (a mark still being written: this feed's own start, a few microseconds later)
            with contextlib.suppress(ValueError):
                self.t0 = min(self.t0, float(mark.read_text()))

    def take(self) -> list[Any] | None:
        if not self.t0:
            self._start()
        if self.pos == len(self.batch):
            batch = next(self.batches, None)
            if batch is None:
                return None
            self.batch, self.pos = batch, 0
        if not self.rate:  # the rest of this batch
            out = self.batch[self.pos :] if self.pos else self.batch
            self.pos = len(self.batch)
            self.taken += len(out)
            return out
        due = int((time.time() - self.t0) * self.rate) + 1 - self.taken
        out = []
        while due > 0:
            if self.pos == len(self.batch):
                batch = next(self.batches, None)
                if batch is None:
                    break
                self.batch, self.pos = batch, 0
            chunk = self.batch[self.pos : self.pos + due]
            out.extend(chunk)
            self.pos += len(chunk)
            due -= len(chunk)
        self.taken += len(out)
        return out

    def due(self) -> float:
        """When the next record is due (wall clock)."""
        return self.t0 + self.taken / self.rate if self.rate else time.time()


def write_result(path: str, summary: dict[str, Any], end: float | None = None) -> None:
    """The run's summary and its end (``end``: when the last result arrived, taken before
    the summary was made, as the floor takes its own; now if not given)."""
    with open(path, "w") as f:
        json.dump({"end": time.time() if end is None else end, **summary}, f)


def write_arrivals(path: str, keys: list[Any], times: list[float]) -> None:
    with open(path, "wb") as f:
        f.write(msgpack.packb([keys, times], use_bin_type=True))


class BatchSpout(Spout):
    """Headwater's source: the feed's records; bounded (the end of input is the end of
    time for event-time windows). Its position is its state, so under checkpoints it
    resumes where the restored checkpoint left off."""

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = ctx.state
        self.feed = Feed(skip=int(self.state.get("taken", 0)))
        self.done = False

    def exhausted(self) -> bool:
        return self.done

    def next_tuple(self) -> None:
        records = None if self.done else self.feed.take()
        if records is None:
            self.done = True
            return
        emit = self.ctx.emit
        for item in records:
            emit([item])
        self.state["taken"] = self.feed.taken


class PartitionSpout(BatchSpout):
    """``BatchSpout`` over task i's own file, ``BENCH_DATA.p<i>`` (the readings whose key
    ``partition_of`` gives to task i, split before the run as Kafka partitions would
    hold them), offered at ``BENCH_RATE`` over all the tasks."""

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = ctx.state
        tasks = len(ctx.component_tasks(ctx.component))
        self.feed = Feed(
            f"{DATA}.p{ctx.component_index}", RATE / tasks, skip=int(self.state.get("taken", 0))
        )
        self.done = False


class Collect:
    """Headwater's sink step: keeps what arrives; writes the summary to ``out`` once it has
    ``expect`` (and, at a fixed rate, when each result arrived, by ``key``)."""

    def __init__(
        self, summary: Summary, key: LatencyKey, out: str = OUT, expect: int = EXPECT
    ) -> None:
        self.summary, self.key, self.out, self.expect = summary, key, out, expect
        self.results: list[Any] = []
        self.times: list[float] = []

    def __call__(self, result: Any) -> None:
        self.results.append(tuple(result))
        if RATE:
            self.times.append(time.time())
        if len(self.results) == self.expect:
            end = time.time()  # the summary's own time is not the run's, as in the floor
            if RATE:  # first: the result file is what the bench waits for
                write_arrivals(self.out + ".lat", [self.key(r) for r in self.results], self.times)
            write_result(self.out, self.summary(self.results), end)


class CollectOwnWords:
    """``Collect`` in each task of a keyed stage: the first result's key names the task
    (``partition_of`` of it among ``parts``), whose file is ``BENCH_OUT.w<i>`` and whose
    number of results ``BENCH_EXPECT_PARTS`` gives. A plain sink, so it is compiled into
    its chain like ``Collect``."""

    def __init__(self, summary: Summary, key: LatencyKey, parts: int) -> None:
        self.summary, self.key, self.parts = summary, key, parts
        self.collect: Collect | None = None

    def __call__(self, result: Any) -> None:
        if self.collect is None:
            from headwater.dsl import partition_of

            i = partition_of(result[0], self.parts)
            expect = int(os.environ.get("BENCH_EXPECT_PARTS", "0").split(",")[i])
            self.collect = Collect(self.summary, self.key, f"{OUT}.w{i}", expect)
        self.collect(result)


class CollectPart(Op):
    """``Collect`` in each task of a partitioned pipeline: task i writes ``BENCH_OUT.w<i>``
    once it has its partition's results (``BENCH_EXPECT_PARTS``, comma-separated)."""

    def __init__(self, name: str, summary: Summary, key: LatencyKey) -> None:
        super().__init__(name)
        self.summary, self.key = summary, key

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        i = ctx.component_index
        expect = int(os.environ.get("BENCH_EXPECT_PARTS", "0").split(",")[i])
        self.collect = Collect(self.summary, self.key, f"{OUT}.w{i}", expect)

    def process(self, key: Any, value: Any, out: Any, side: Any) -> None:
        self.collect(value)
