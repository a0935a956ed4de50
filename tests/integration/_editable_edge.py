"""Revisions of an edge-to-cloud topology for the live-edit tests, written as files.

On every agent: the MQTT ingest log -> ``count`` (a keyed count per sensor
topic, tagged with its code's VERSION) and any number of probe subgraphs
kept on the edge (``probe_N`` -> ``probe_N_sink``, a transactional sink in
the agent's folder). In the cloud: ``sink`` writes [topic, seq, count,
version], and any number of taps read what ``count`` sends up (``tap_N`` ->
``tap_N_sink``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

SOURCE = """
import json
import os
from functools import partial

from headwater import Bolt, Reliability, Topology, fields, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


class Count(Bolt):
    outputs = ("topic", "seq", "count", "version")
    VERSION = {version}

    def open(self, ctx):
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")

    def process(self, tup):
        topic, payload, _ = tup.values
        seq = json.loads(payload)["seq"]
        count = self.counts[topic] = self.counts.get(topic, 0) + 1
        self.ctx.emit([topic, seq, count, self.VERSION])


class Tap(Bolt):
    outputs = ("topic", "seq")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        self.ctx.emit([tup.values[0], tup.values[1]])


class Probe(Bolt):
    outputs = ("topic", "seq")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        self.ctx.emit([tup.values[0], json.loads(tup.values[1])["seq"]])


topology = (
    Topology("edgeedit", config={{
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 0.3,
    }})
    .add_spout("readings", partial(Readings, LOG, partitions=1), outputs=Readings.outputs,
               placement=edge())
    .add_bolt("count", Count, inputs={{"readings": fields("topic")}}, placement=edge())
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/counts"),
              inputs={{"count": fields("topic")}})
)
"""

PROBE = """
topology = (
    topology.add_bolt("probe_{n}", Probe, inputs={{"readings": shuffle()}}, placement=edge())
    .add_bolt("probe_{n}_sink", partial(TransactionalFileSink, LOG + "-probe_{n}"),
              inputs={{"probe_{n}": shuffle()}}, placement=edge())
)
"""

TAP = """
topology = (
    topology.add_bolt("tap_{n}", Tap, inputs={{"count": shuffle()}})
    .add_bolt("tap_{n}_sink", partial(TransactionalFileSink, OUT + "/tap_{n}"),
              inputs={{"tap_{n}": shuffle()}})
)
"""


def write(folder: Path, version: int, probes: Sequence[int] = (), taps: Sequence[int] = ()) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "edgeedit.py"
    text = SOURCE.format(version=version)
    text += "".join(PROBE.format(n=n) for n in probes) + "".join(TAP.format(n=n) for n in taps)
    path.write_text(text)
    return path
