"""Bytewax's source and sink for the peer runners (see ``bench/peer_kit.py``)."""

from __future__ import annotations

from typing import Any

from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition

from bench.peer_kit import OUT, Summary, timed_batches, write_result


class _Batches(StatefulSourcePartition[Any, None]):
    def __init__(self) -> None:
        self.batches = timed_batches()

    def next_batch(self) -> list[Any]:
        batch = next(self.batches, None)
        if batch is None:
            raise StopIteration
        return batch

    def snapshot(self) -> None:
        return None


class BatchSource(FixedPartitionedSource[Any, None]):
    """The data's batches, as one partition."""

    def list_parts(self) -> list[str]:
        return ["0"]

    def build_part(self, step_id: str, for_part: str, resume_state: None) -> _Batches:
        return _Batches()


class _Collect(StatelessSinkPartition[Any]):
    def __init__(self, worker: int, summary: Summary) -> None:
        self.worker, self.summary = worker, summary
        self.results: list[Any] = []

    def write_batch(self, items: list[Any]) -> None:
        self.results.extend(items)

    def close(self) -> None:
        write_result(f"{OUT}.w{self.worker}", self.summary(self.results))


class Collect(DynamicSink[Any]):
    """Each worker keeps what arrives and writes its share's summary at the end of input."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary

    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Collect:
        return _Collect(worker_index, self.summary)
