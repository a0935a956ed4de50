"""Word count on Bytewax: ``python -m bytewax.run bench.wc.bytewax_flow:flow``.

Run as one process, or as two (``-i 0|1 -a HOST:PORT;HOST:PORT``): each worker's
sink writes its share of the results to ``BENCH_OUT.wN``.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import bytewax.operators as op
from bytewax.dataflow import Dataflow
from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition

from bench.wc.functions import count, read_batches, split, summary

DATA = os.environ.get("BENCH_DATA", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")


class _Sentences(StatefulSourcePartition[str, None]):
    def __init__(self) -> None:
        self.batches = read_batches(DATA)
        self.started = False

    def next_batch(self) -> list[str]:
        batch = next(self.batches, None)
        if batch is None:
            raise StopIteration
        if not self.started:
            self.started = True
            with open(OUT + ".start", "w") as f:
                f.write(repr(time.time()))
        return batch

    def snapshot(self) -> None:
        return None


class Sentences(FixedPartitionedSource[str, None]):
    def list_parts(self) -> list[str]:
        return ["0"]

    def build_part(self, step_id: str, for_part: str, resume_state: None) -> _Sentences:
        return _Sentences()


class _Collect(StatelessSinkPartition[Any]):
    def __init__(self, worker: int) -> None:
        self.worker = worker
        self.results: list[Any] = []

    def write_batch(self, items: list[Any]) -> None:
        self.results.extend(items)

    def close(self) -> None:
        with open(f"{OUT}.w{self.worker}", "w") as f:
            json.dump({"end": time.time(), **summary(self.results)}, f)


class Collect(DynamicSink[Any]):
    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Collect:
        return _Collect(worker_index)


def _count(total: int | None, word: str) -> tuple[int, int]:
    c = count(total, word)
    return c, c


flow = Dataflow("wcbench")
words = op.flat_map("split", op.input("sentences", flow, Sentences()), split)
counts = op.stateful_map("count", op.key_on("word", words, lambda w: w), _count)
op.output("out", counts, Collect())
