"""Bench topology: readings from an agent's ingest log, stamped at the edge, landed in the cloud.

    readings (LogSpout, edge) -> stamp (edge: JSON -> [sensor, seq, sent_ms])
      -> landing (cloud: TransactionalFileSink, a part file per cloud checkpoint)

BENCH_OUT: output folder; BENCH_INTERVAL: checkpoint interval in seconds (both domains).
"""

from __future__ import annotations

import json
import os
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/tmp/hw-bench-ingest")
OUT = os.environ.get("BENCH_OUT", "/tmp/hw-bench-edge")
INTERVAL = float(os.environ.get("BENCH_INTERVAL", "1"))


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


class Stamp(Bolt):
    outputs = ("sensor", "seq", "sent_ms")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        r = json.loads(tup.values[1])
        self.ctx.emit([r["sensor"], r["seq"], r["sent_ms"]])


topology = (
    Topology(
        "edgebench",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": INTERVAL,
        },
    )
    .add_spout(
        "readings", partial(Readings, LOG, partitions=1), outputs=Readings.outputs, placement=edge()
    )
    .add_bolt("stamp", Stamp, inputs={"readings": fields("topic")}, placement=edge())
    .add_bolt("landing", partial(TransactionalFileSink, OUT), inputs={"stamp": fields("sensor")})
)
