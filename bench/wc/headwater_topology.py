"""Word count as a Headwater DSL pipeline (``bench/peers.py`` runs it on a LocalCluster).

Fused as the DSL does it: sentences -> split -> key by word in one process,
the running count -> sink in another, one stream-manager hop between.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bench.wc.functions import read_batches, split, summary
from headwater import Context, Spout
from headwater.dsl import Pipeline

DATA = os.environ.get("BENCH_DATA", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
EXPECT = int(os.environ.get("BENCH_EXPECT", "0"))


class Sentences(Spout):
    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.batches = read_batches(DATA)
        self.started = False

    def next_tuple(self) -> None:
        batch = next(self.batches, None)
        if batch is None:
            return
        if not self.started:
            self.started = True
            with open(OUT + ".start", "w") as f:
                f.write(repr(time.time()))
        emit = self.ctx.emit
        for sentence in batch:
            emit([sentence])


class Collect:
    def __init__(self) -> None:
        self.results: list[Any] = []

    def __call__(self, result: Any) -> None:
        self.results.append(tuple(result))
        if len(self.results) == EXPECT:
            with open(OUT, "w") as f:
                json.dump({"end": time.time(), **summary(self.results)}, f)


pipeline = Pipeline("wcbench")
(
    pipeline.source("sentences", Sentences)
    .flat_map("split", split)
    .key_by("word", lambda w: w)
    .map("one", lambda w: (w, 1))
    .reduce_by_key("count", lambda a, b: (a[0], a[1] + b[1]))
    .sink("out", Collect())
)
topology = pipeline.build()
