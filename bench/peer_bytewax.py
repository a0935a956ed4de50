"""Bytewax's source and sink for the peer runners (see ``bench/peer_kit.py``)."""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime
from typing import Any

from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition

from bench.peer_kit import (
    DATA,
    OUT,
    RATE,
    Feed,
    LatencyKey,
    Summary,
    write_arrivals,
    write_result,
)

# bytewax-par: a source of this many partitions, partition i reading ``BENCH_DATA.p<i>``
# (the workload's split_data), each offered its share of ``BENCH_RATE``
PARTITIONS = int(os.environ.get("BENCH_PARTITIONS", "0"))


class _Batches(StatefulSourcePartition[Any, None]):
    def __init__(self, feed: Feed) -> None:
        self.feed = feed

    def next_batch(self) -> list[Any]:
        records = self.feed.take()
        if records is None:
            raise StopIteration
        return records

    def next_awake(self) -> datetime | None:
        return datetime.fromtimestamp(self.feed.due(), tz=UTC) if RATE else None

    def snapshot(self) -> None:
        return None


class BatchSource(FixedPartitionedSource[Any, None]):
    """The feed's records (see ``peer_kit.Feed``), as one partition, or with
    ``BENCH_PARTITIONS`` set as that many, one per file of the split data (Bytewax hands
    the partitions out over its workers)."""

    def list_parts(self) -> list[str]:
        return [str(i) for i in range(PARTITIONS or 1)]

    def build_part(self, step_id: str, for_part: str, resume_state: None) -> _Batches:
        if not PARTITIONS:
            return _Batches(Feed())
        return _Batches(Feed(f"{DATA}.p{for_part}", RATE / PARTITIONS))


class _Collect(StatelessSinkPartition[Any]):
    def __init__(self, worker: int, summary: Summary, key: LatencyKey) -> None:
        self.worker, self.summary, self.key = worker, summary, key
        self.results: list[Any] = []
        self.times: list[float] = []
        self.last: float | None = None  # when the last result arrived

    def write_batch(self, items: list[Any]) -> None:
        self.results.extend(items)
        self.last = now = time.time()  # the run ends with its last result, as the floor's
        if RATE:
            self.times.extend(now for _ in items)

    def close(self) -> None:
        # the run's end: its last result's, not the summary's time nor the teardown's
        end = self.last if self.last is not None else time.time()
        if RATE:
            keys = [self.key(r) for r in self.results]
            write_arrivals(f"{OUT}.w{self.worker}.lat", keys, self.times)
        write_result(f"{OUT}.w{self.worker}", self.summary(self.results), end)


class Collect(DynamicSink[Any]):
    """Each worker keeps what arrives and writes its share's summary at the end of input
    (and, at a fixed rate, when each result arrived)."""

    def __init__(self, summary: Summary, key: LatencyKey) -> None:
        self.summary, self.key = summary, key

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Collect:
        return _Collect(worker_index, self.summary, self.key)
