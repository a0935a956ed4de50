"""Durable log -> two keyed stateful stages -> transactional sink, exactly once.

``tally`` keeps a running count per key and ``total`` a running sum of seq
per key, both in keyed state; the sink writes [key, seq, count, total] rows.
Every row can be checked against an offline recomputation.
"""

from __future__ import annotations

import os
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
PARTITIONS = 4
RATE = float(os.environ.get("HW_TEST_RATE", "0"))
FORMAT = os.environ.get("HW_TEST_FORMAT", "jsonl")


class Tally(Bolt):
    outputs = ("key", "seq", "count")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")

    def process(self, tup: Tuple) -> None:
        key, seq = tup.values
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count])


class Total(Bolt):
    outputs = ("key", "seq", "count", "total")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.totals = ctx.keyed_state("total")

    def process(self, tup: Tuple) -> None:
        key, seq, count = tup.values
        total = self.totals[key] = self.totals.get(key, 0) + seq
        self.ctx.emit([key, seq, count, total])


class Window(Bolt):
    """Tumbling windows of WINDOW seqs per key: emits [key, window, count, sum] when one closes."""

    outputs = ("key", "window", "count", "sum")
    WINDOW = 100

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.open_windows = ctx.keyed_state("window")  # key -> [window, count, sum]

    def process(self, tup: Tuple) -> None:
        key, seq = tup.values
        w = seq // self.WINDOW
        acc = self.open_windows.get(key)
        if acc is not None and acc[0] != w:
            self.ctx.emit([key, *acc])
            acc = None
        if acc is None:
            acc = [w, 0, 0]
        self.open_windows[key] = [w, acc[1] + 1, acc[2] + seq]


topology = (
    Topology(
        "exactly-once",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 1,
        },
    )
    .add_spout(
        "log",
        partial(LogSpout, LOG, partitions=PARTITIONS, max_rate=RATE),
        parallelism=2,
        outputs=("key", "seq"),
    )
    .add_bolt("tally", Tally, parallelism=2, inputs={"log": fields("key")})
    .add_bolt("total", Total, parallelism=2, inputs={"tally": fields("key")})
    .add_bolt(
        "sink",
        partial(TransactionalFileSink, OUT, format=FORMAT),
        parallelism=2,
        inputs={"total": fields("key")},
    )
    .add_bolt("window", Window, parallelism=2, inputs={"log": fields("key")})
    .add_bolt(
        "window_sink",
        partial(TransactionalFileSink, f"{OUT}-windows", format=FORMAT),
        parallelism=1,
        inputs={"window": fields("key")},
    )
)
