"""Revisions of one topology for the live-edit tests, written as files.

A durable log of [key, seq] records feeds ``counter`` (2 tasks, a keyed
count per key, tagged with its code's VERSION) into a transactional sink;
each attached tap is a subgraph (``tap_X`` -> ``tap_X_sink``) reading the
log. Every row says which version of which component handled which record.

``write_dsl`` writes the same counter as a DSL pipeline (``headwater.dsl``): its
chains emit through an emit bound once (``Context.emitter``), which a rescale of
the keyed step's component must reroute.
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


DSL = """
import os
from functools import partial

from headwater import Reliability
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.dsl import Pipeline

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
RATE = float(os.environ.get("HW_TEST_RATE", "0"))
VERSION = {version}


class Records(LogSpout):
    outputs = ("key", "seq")


p = Pipeline("editable", config={{
    "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
    "topology.stateful.checkpoint.interval.seconds": 0.3,
}})
(
    p.source("log", partial(Records, LOG, 1, RATE))
    .key_by("by_key", lambda r: r[0])
    .map("one", lambda r: (r[0], r[1], 1))  # (key, seq, count)
    .reduce_by_key("counter", lambda a, b: (b[0], b[1], a[2] + b[2]), parallelism={parallelism})
    .map("row", lambda v: [*v, VERSION])
    .to("sink", partial(TransactionalFileSink, OUT + "/counter"))
)
topology = p.build()
"""


def write_dsl(folder: Path, version: int, parallelism: int = 2) -> Path:
    """The counter as a DSL pipeline: components ``log`` (the source chain), ``counter``
    (the keyed running count, on ``parallelism`` tasks) and ``sink``; its rows are
    ``[key, [key, seq, count, version]]``."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "editable.py"
    path.write_text(DSL.format(version=version, parallelism=parallelism))
    return path
