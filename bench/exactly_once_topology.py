"""Benchmark topologies for exactly-once (configured by BENCH_* environment variables).

BENCH_SHAPE=pipeline: durable log -> keyed running count -> keyed running sum -> sink
(the shape of the exactly-once kill test). BENCH_SHAPE=state: a spout that emits
BENCH_KEYS distinct keys once (then BENCH_TRICKLE updates a second), into a bolt
that keeps one keyed value per key, to measure checkpoint duration and the pause
in processing against state size.
"""

from __future__ import annotations

import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink

SHAPE = os.environ.get("BENCH_SHAPE", "pipeline")
LOG = os.environ.get("BENCH_LOG", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
INTERVAL = float(os.environ.get("BENCH_INTERVAL", "1"))
RATE = float(os.environ.get("BENCH_RATE", "0"))
KEYS = int(os.environ.get("BENCH_KEYS", "1000"))
TRICKLE = float(os.environ.get("BENCH_TRICKLE", "0"))  # key updates a second, once all are in
PARTITIONS = 4


class Tally(Bolt):
    outputs = ("key", "seq", "count")

    def open(self, ctx: Context) -> None:
        self.ctx, self.counts = ctx, ctx.keyed_state("count")

    def process(self, tup: Tuple) -> None:
        key, seq = tup.values
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count])


class Total(Bolt):
    outputs = ("key", "seq", "count", "total")

    def open(self, ctx: Context) -> None:
        self.ctx, self.totals = ctx, ctx.keyed_state("total")

    def process(self, tup: Tuple) -> None:
        key, seq, count = tup.values
        total = self.totals[key] = self.totals.get(key, 0) + seq
        self.ctx.emit([key, seq, count, total])


class Keys(Spout):
    """Emits each of this task's share of KEYS keys once, then updates TRICKLE keys a
    second (cycling through them), so that the bolt keeps processing across checkpoints."""

    outputs = ("key",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        done = ctx.state.get("done", 0)
        n = len(ctx.component_tasks(ctx.component))
        self.todo = iter(range(ctx.component_index + done * n, KEYS, n))
        self.done = done
        self.t0 = 0.0
        self.sent = 0

    def next_tuple(self) -> None:
        for _ in range(500):
            key = next(self.todo, None)
            if key is None:
                return self._trickle()
            self.ctx.emit([key])
            self.done += 1
        return None

    def _trickle(self) -> None:
        if not TRICKLE:
            return
        now = time.monotonic()
        if not self.t0:
            self.t0 = now
        due = int((now - self.t0) * TRICKLE)
        while self.sent < due:
            self.ctx.emit([self.sent % KEYS])
            self.sent += 1

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self.ctx.state["done"] = self.done


class Hold(Bolt):
    """Keeps a distinct 64-character value per key: keyed state of about KEYS x 80 bytes.

    With BENCH_OUT set, once the keys are all in it writes there, each second, the
    longest gap between two records it processed in that second, in ms."""

    def open(self, ctx: Context) -> None:
        self.values = ctx.keyed_state("values")
        self.last = self.window = 0.0
        self.worst = 0.0

    def process(self, tup: Tuple) -> None:
        key = tup.values[0]
        self.values[key] = f"{key:064d}"  # distinct: pickle cannot share one string
        if OUT == "/nonexistent" or len(self.values) < KEYS:
            return
        now = time.monotonic()
        if self.last:
            self.worst = max(self.worst, now - self.last)
        else:
            self.window = now
        self.last = now
        if now - self.window >= 1.0:
            with open(OUT, "a") as f:
                f.write(f"{self.worst * 1000:.1f}\n")
            self.window, self.worst = now, 0.0


CONFIG = {
    "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
    "topology.stateful.checkpoint.interval.seconds": INTERVAL,
}

if SHAPE == "state":
    topology = (
        Topology("bench-state", config=CONFIG)
        .add_spout("keys", Keys, parallelism=1)
        .add_bolt("hold", Hold, parallelism=1, inputs={"keys": fields("key")})
    )
else:
    topology = (
        Topology("bench-exactly-once", config=CONFIG)
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
            partial(TransactionalFileSink, OUT),
            parallelism=2,
            inputs={"total": fields("key")},
        )
    )
