"""Bench topology: readings from an agent's ingest log, stamped at the edge, landed in the cloud.

    readings (LogSpout, edge) -> stamp (edge: JSON -> [sensor, seq, sent_ms])
      -> landing (cloud: TransactionalFileSink, a part file per cloud checkpoint)

BENCH_OUT: output folder; BENCH_INTERVAL: checkpoint interval in seconds (both domains: every
daemon that loads this file must have it, the master too, whose topology master runs the cloud
domain). BENCH_TRACE=1 (``python -m bench edge --trace``): each row also carries when the
agent's ingest took it, when the edge's ``stamp`` handled it and when the cloud first saw it
(a cloud ``arrive`` bolt before the sink), for the bench's account of where the time goes.
BENCH_SCORE=1 (``python -m bench edge-scoring``): an edge ``score`` component after
``stamp``, a ``ScoreBolt`` scoring each row's ``seq`` and ``sent_ms`` with the ONNX model
``edge-model`` the package ships (``headwater_models.json``, ``models/<sha256>.onnx``), so
rows land with the score and the model version appended.
"""

from __future__ import annotations

import json
import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/tmp/hw-bench-ingest")
OUT = os.environ.get("BENCH_OUT", "/tmp/hw-bench-edge")
INTERVAL = float(os.environ.get("BENCH_INTERVAL", "1"))
TRACE = os.environ.get("BENCH_TRACE") == "1"
SCORE = os.environ.get("BENCH_SCORE") == "1"
SCORE_MODEL, SCORE_INPUTS = "edge-model", (1, 2)  # seq, sent_ms


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")
    REFRESH_S = 0.01  # latency first: catch up with the ingest log every 10 ms (default 50)


class Stamp(Bolt):
    outputs = ("sensor", "seq", "sent_ms") + (("received_ms", "edge_ms") if TRACE else ())

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        r = json.loads(tup.values[1])
        row = [r["sensor"], r["seq"], r["sent_ms"]]
        if TRACE:
            row += [tup.values[2], time.time() * 1000]
        self.ctx.emit(row)


class Arrive(Bolt):
    """Trace only: when the cloud first saw the row."""

    outputs = (*Stamp.outputs, "cloud_ms")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.ctx.emit([*tup.values, time.time() * 1000])


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
)
last = "stamp"
if SCORE:
    from headwater.models import ScoreBolt

    topology = topology.add_bolt(
        "score",
        partial(ScoreBolt, SCORE_MODEL, SCORE_INPUTS),
        inputs={"stamp": fields("sensor")},
        outputs=(*Stamp.outputs, "score", "model_version"),
        config=ScoreBolt.config(SCORE_MODEL, SCORE_INPUTS),
        placement=edge(),
    )
    last = "score"
if TRACE:
    topology = topology.add_bolt(
        "arrive", Arrive, inputs={"stamp": fields("sensor")}, outputs=Arrive.outputs
    ).add_bolt("landing", partial(TransactionalFileSink, OUT), inputs={"arrive": fields("sensor")})
else:
    topology = topology.add_bolt(
        "landing", partial(TransactionalFileSink, OUT), inputs={last: fields("sensor")}
    )
