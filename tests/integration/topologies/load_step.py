"""A load step for the health manager: a durable log -> a bolt of fixed cost -> a sink.

The log's records are [key, seq, pad] (the pad makes a few hundred bytes of each, so that
the small queues fill within seconds of the bolt falling behind).

``counter`` sleeps ``HW_TEST_COST`` seconds per record (a fixed cost per record: one task
keeps up with about ``1 / COST`` records/s) and keeps a running count per key in keyed
state; the transactional sink writes [key, seq, count] rows, exactly once. It starts on one
task; the health policy (``auto``, at most 4 tasks, short cooldown) is in the config. The
queues are small, so that a bolt that does not keep up holds its spout back within seconds.
"""

from __future__ import annotations

import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
COST = float(os.environ.get("HW_TEST_COST", "0.01"))


class Counter(Bolt):
    outputs = ("key", "seq", "count")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")

    def process(self, tup: Tuple) -> None:
        key, seq, _pad = tup.values
        time.sleep(COST)  # the fixed cost of a record
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count])


topology = (
    Topology(
        "loadstep",
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
    .add_bolt("counter", Counter, parallelism=1, inputs={"log": fields("key")})
    .add_bolt(
        "sink", partial(TransactionalFileSink, OUT + "/counter"), inputs={"counter": fields("key")}
    )
)
