"""Revisions of one topology for the live-edit tests, written as files.

A durable log of [key, seq] records feeds ``counter`` (2 tasks, a keyed
count per key, tagged with its code's VERSION) into a transactional sink;
each attached tap is a subgraph (``tap_X`` -> ``tap_X_sink``) reading the
log. Every row says which version of which component handled which record.
"""

from __future__ import annotations

from pathlib import Path

HEADER = """
import os
from functools import partial

from headwater import Bolt, Reliability, Topology, fields, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
RATE = float(os.environ.get("HW_TEST_RATE", "0"))


class Counter(Bolt):
    outputs = ("key", "seq", "count", "version")
    VERSION = {version}

    def open(self, ctx):
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")
{fail}
    def process(self, tup):
        key, seq = tup.values
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count, self.VERSION])


class Tap(Bolt):
    outputs = ("key", "seq")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        self.ctx.emit(list(tup.values))


topology = (
    Topology("editable", config={{
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 0.3,
    }})
    .add_spout("log", partial(LogSpout, LOG, partitions=1, max_rate=RATE), outputs=("key", "seq"))
    .add_bolt("counter", Counter, parallelism={parallelism}, inputs={{"log": fields("key")}})
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/counter"),
              inputs={{"counter": fields("key")}})
)
"""

TAP = """
topology = (
    topology.add_bolt("tap_{n}", Tap, inputs={{"log": shuffle()}})
    .add_bolt("tap_{n}_sink", partial(TransactionalFileSink, OUT + "/tap_{n}"),
              inputs={{"tap_{n}": shuffle()}})
)
"""

FAIL = """
        raise RuntimeError("the new counter cannot start: no model file")
"""


def write(
    folder: Path, version: int, taps: list[int], fail: bool = False, parallelism: int = 2
) -> Path:
    """The topology file with counter VERSION ``version`` (on ``parallelism`` tasks) and taps."""
    folder.mkdir(parents=True, exist_ok=True)
    text = HEADER.format(version=version, fail=FAIL if fail else "", parallelism=parallelism)
    text += "".join(TAP.format(n=n) for n in taps)
    path = folder / "editable.py"
    path.write_text(text)
    return path
