"""A slow instance for the health manager: a durable log -> a bolt of fixed cost on two
tasks under a shuffle grouping -> a keyed counter -> a sink.

The log's records are [key, seq, pad] (the pad makes a few hundred bytes of each, so that
the small queues fill within seconds of a task falling behind).

``work`` sleeps ``HW_TEST_COST`` seconds per record (one task keeps up with about
``1 / COST`` records/s) and passes [key, seq] on; its two tasks share the log's records
round-robin (shuffle), so each task's true rate (records per busy second) should be its
sibling's. ``count`` keeps a running count per key in keyed state; the transactional sink
writes [key, seq, count] rows, exactly once. The health policy is ``auto`` (at most 4
tasks): a task made slow must be restarted, not the component rescaled. The queues are
small, so that a task that does not keep up is loaded (its queue full) within seconds.
"""

from __future__ import annotations

import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
COST = float(os.environ.get("HW_TEST_COST", "0.01"))


class Work(Bolt):
    outputs = ("key", "seq")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        key, seq, _pad = tup.values
        time.sleep(COST)  # the fixed cost of a record
        self.ctx.emit([key, seq])


class Count(Bolt):
    outputs = ("key", "seq", "count")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")

    def process(self, tup: Tuple) -> None:
        key, seq = tup.values
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count])


topology = (
    Topology(
        "slowtask",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 0.5,
            "headwater.stmgr.buffer.high.bytes": 16 << 10,
            "headwater.stmgr.buffer.low.bytes": 8 << 10,
            "headwater.instance.queue.high.bytes": 8 << 10,
            "headwater.instance.queue.low.bytes": 4 << 10,
            "headwater.health.mode": "auto",
            "headwater.health.max_parallelism": 4,
            "headwater.health.cooldown_s": 20,
            "headwater.health.stabilization_s": 30,
        },
    )
    .add_spout("log", partial(LogSpout, LOG, partitions=1), outputs=("key", "seq", "pad"))
    .add_bolt("work", Work, parallelism=2, inputs={"log": shuffle()})
    .add_bolt("count", Count, inputs={"work": fields("key")})
    .add_bolt(
        "sink", partial(TransactionalFileSink, OUT + "/counter"), inputs={"count": fields("key")}
    )
)
