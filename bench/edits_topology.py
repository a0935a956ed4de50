"""The live-edit benchmark's topology, written out per revision by ``bench/edits.py``.

``log`` (a durable log read at a steady rate) feeds ``counter`` (2 tasks,
keyed state) and, on a path no edit touches, ``mirror``, which notes every
pause between two records longer than 10 ms in a side file. Edits replace
``counter`` (a new VERSION), attach taps and remove them. Each new version
and each tap notes, once, when it processed its first record.
"""

from __future__ import annotations

TEMPLATE = '''
import os
import time
from functools import partial

from headwater import Bolt, Reliability, Topology, fields, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink

LOG = os.environ.get("BENCH_LOG", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
RATE = float(os.environ.get("BENCH_RATE", "0"))
INTERVAL = float(os.environ.get("BENCH_INTERVAL", "1"))


def first_record(name):
    path = os.path.join(OUT, "first", name)
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(repr(time.time()))


class Counter(Bolt):
    outputs = ("key", "seq", "count", "version")
    VERSION = {version}

    def open(self, ctx):
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")
        self.first = False

    def process(self, tup):
        if not self.first:
            self.first = True
            first_record(f"counter-v{{self.VERSION}}-{{self.ctx.task_id}}")
        key, seq = tup.values
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count, self.VERSION])


class Mirror(Bolt):
    """Untouched by every edit: notes the pauses between records."""

    def open(self, ctx):
        self.last = None
        os.makedirs(OUT, exist_ok=True)
        self.gaps = open(os.path.join(OUT, f"gaps-{{ctx.task_id}}.jsonl"), "a")

    def process(self, tup):
        now = time.time()
        if self.last is not None and now - self.last > 0.01:
            self.gaps.write(f"[{{self.last!r}}, {{now!r}}]\\n")
            self.gaps.flush()
        self.last = now


class Tap(Bolt):
    outputs = ("key", "seq")

    def open(self, ctx):
        self.ctx = ctx
        self.first = False

    def process(self, tup):
        if not self.first:
            self.first = True
            first_record(self.ctx.component)
        self.ctx.emit(list(tup.values))


topology = (
    Topology("editbench", config={{
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": INTERVAL,
    }})
    .add_spout("log", partial(LogSpout, LOG, partitions=1, max_rate=RATE), outputs=("key", "seq"))
    .add_bolt("counter", Counter, parallelism=2, inputs={{"log": fields("key")}})
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/counter"),
              inputs={{"counter": fields("key")}})
    .add_bolt("mirror", Mirror, inputs={{"log": shuffle()}})
)
'''

TAP = """
topology = (
    topology.add_bolt("{name}", Tap, inputs={{"log": shuffle()}})
    .add_bolt("{name}_sink", partial(TransactionalFileSink, OUT + "/{name}"),
              inputs={{"{name}": shuffle()}})
)
"""


def source(version: int, taps: list[str]) -> str:
    return TEMPLATE.format(version=version) + "".join(TAP.format(name=t) for t in taps)
