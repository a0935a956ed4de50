"""Bench topology for moves: readings on the agent, counted per sensor where ``count`` runs.

    readings (LogSpout, edge) -> parse (edge: [sensor, site, seq, sent_ms])
      -> count (cloud by its code; keyed per sensor, its keys' sites declared: it moves
         with its state) -> landing (cloud: TransactionalFileSink)

Each landed row is ``[sensor, seq, sent_ms, count, where, handled_ms]``: ``where`` the side
``count`` ran on for it (``edge``, where the agent's ingest log is, or ``cloud``) and
``handled_ms`` when it counted it. BENCH_OUT: output folder; BENCH_INTERVAL: checkpoint
interval in seconds (every daemon that loads this file must have it).
"""

from __future__ import annotations

import json
import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge, sites

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/tmp/hw-bench-ingest")
OUT = os.environ.get("BENCH_OUT", "/tmp/hw-bench-moves")
INTERVAL = float(os.environ.get("BENCH_INTERVAL", "1"))


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")
    REFRESH_S = 0.01


class Parse(Bolt):
    outputs = ("sensor", "site", "seq", "sent_ms")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        r = json.loads(tup.values[1])
        self.ctx.emit([r["sensor"], tup.values[0].split("/")[1], r["seq"], r["sent_ms"]])


class Count(Bolt):
    outputs = ("sensor", "seq", "sent_ms", "count", "where", "handled_ms")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts = ctx.keyed_state("counts")
        self.where = "edge" if "HEADWATER_INGEST_LOG" in os.environ else "cloud"

    def process(self, tup: Tuple) -> None:
        sensor, _site, seq, sent_ms = tup.values
        n = self.counts[sensor] = self.counts.get(sensor, 0) + 1
        self.ctx.emit([sensor, seq, sent_ms, n, self.where, time.time() * 1000])


topology = (
    Topology(
        "movebench",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": INTERVAL,
        },
    )
    .add_spout(
        "readings", partial(Readings, LOG, partitions=1), outputs=Readings.outputs, placement=edge()
    )
    .add_bolt("parse", Parse, inputs={"readings": fields("topic")}, placement=edge())
    .add_bolt("count", Count, inputs={"parse": fields("sensor")}, config=sites("site"))
    .add_bolt("landing", partial(TransactionalFileSink, OUT), inputs={"count": fields("sensor")})
)
