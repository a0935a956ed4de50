"""A skewed key for the health manager: a log -> a fields-grouped bolt of 3 tasks -> a sink.

The log's records are [key, seq, pad]; the test writes most of them under one key, which
the fields grouping sends to one of ``counter``'s tasks. ``counter`` sleeps ``HW_TEST_COST``
seconds per record (one task keeps up with about ``1 / COST`` records/s) and keeps a running
count per key in keyed state; the transactional sink writes [key, seq, count] rows, exactly
once. The health policy is ``auto``, with a short cooldown (a report every 5 s) and a
stabilization of 20 s (an idle start, over-provisioned, is not scaled down before the load).
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
TASKS = 3


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
        "skew",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 0.5,
            # frames of at most 50 records (1 s of the hot task's work): an instance reports
            # between frames, and one of the default 1000 (20 s) left a task silent that long
            "headwater.batch.size": 50,
            "headwater.stmgr.buffer.high.bytes": 16 << 10,
            "headwater.stmgr.buffer.low.bytes": 8 << 10,
            "headwater.instance.queue.high.bytes": 8 << 10,
            "headwater.instance.queue.low.bytes": 4 << 10,
            "headwater.health.mode": "auto",
            "headwater.health.max_parallelism": 6,
            "headwater.health.cooldown_s": 5,
            "headwater.health.stabilization_s": 20,
        },
    )
    .add_spout("log", partial(LogSpout, LOG, partitions=1), outputs=("key", "seq", "pad"))
    .add_bolt("counter", Counter, parallelism=TASKS, inputs={"log": fields("key")})
    .add_bolt(
        "sink", partial(TransactionalFileSink, OUT + "/counter"), inputs={"counter": fields("key")}
    )
)
