"""An edge bolt that cannot keep up with its ingest, for the health manager's edge diagnosis.

On the agent: the MQTT ingest log -> ``slow``, which sleeps ``HW_TEST_COST`` seconds per
record (a fixed cost per record: one task keeps up with about ``1 / COST`` records/s) and
sends [topic, seq] up; in the cloud a transactional sink writes them, exactly once. ``slow``
starts on one task; the health policy (``auto``, tasks aimed at 50 % busy, short cooldown)
is in the config. The
queues are small, so that the bolt holds its spout back within seconds of falling behind.
"""

from __future__ import annotations

import json
import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
COST = float(os.environ.get("HW_TEST_COST", "0.02"))


class Slow(Bolt):
    outputs = ("topic", "seq")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        topic, payload, _received_ms = tup.values
        time.sleep(COST)  # the fixed cost of a record
        self.ctx.emit([topic, json.loads(payload)["seq"]])


topology = (
    Topology(
        "edgeload",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 0.5,
            "headwater.stmgr.buffer.high.bytes": 16 << 10,
            "headwater.stmgr.buffer.low.bytes": 8 << 10,
            "headwater.instance.queue.high.bytes": 8 << 10,
            "headwater.instance.queue.low.bytes": 4 << 10,
            "headwater.health.mode": "auto",
            "headwater.health.max_parallelism": 8,
            "headwater.health.target_utilization": 0.5,
            "headwater.health.cooldown_s": 30,
            "headwater.health.stabilization_s": 60,
        },
    )
    .add_spout(
        "readings",
        partial(LogSpout, LOG, partitions=1),
        outputs=("topic", "payload", "received_ms"),
        placement=edge(),
    )
    .add_bolt("slow", Slow, parallelism=1, inputs={"readings": shuffle()}, placement=edge())
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/sink"), inputs={"slow": shuffle()})
)
