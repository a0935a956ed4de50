"""The topology docs/live-edits.md ("Change it while it runs") edits live: revision 1.

``numbers`` makes records [key, seq] by itself (keys k0..k3, seq 0, 1, 2, ... at about
20 a second; its position is checkpointed state), ``counter`` counts per key (keyed
state, 2 tasks), ``sink`` commits [key, seq, count, version] rows to
$EDITABLE_OUT/counter (default: ./editable-out under the worker's current folder).
with_tap.py adds a tap; counter_v2.py is new counter code (version 2).
"""

import os
import time
from functools import partial

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, fields
from headwater.connectors import TransactionalFileSink

OUT = os.environ.get("EDITABLE_OUT") or os.path.abspath("editable-out")
KEYS = 4
RATE = 20.0  # records a second


class Numbers(Spout):
    outputs = ("key", "seq")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = ctx.state  # restored at a restart: no record twice, none skipped
        self.state.setdefault("next", 0)
        self.started, self.sent = time.monotonic(), 0

    def next_tuple(self) -> None:
        if self.sent >= (time.monotonic() - self.started) * RATE:
            return
        self.sent += 1
        seq = self.state["next"]
        self.ctx.emit([f"k{seq % KEYS}", seq])
        self.state["next"] = seq + 1


class Counter(Bolt):
    outputs = ("key", "seq", "count", "version")
    VERSION = 1

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts = ctx.keyed_state("count")

    def process(self, tup: Tuple) -> None:
        key, seq = tup.values
        count = self.counts[key] = self.counts.get(key, 0) + 1
        self.ctx.emit([key, seq, count, self.VERSION])


topology = (
    Topology("editable", config={"topology.reliability.mode": Reliability.EXACTLY_ONCE.value})
    .add_spout("numbers", Numbers)
    .add_bolt("counter", Counter, parallelism=2, inputs={"numbers": fields("key")})
    .add_bolt(
        "sink",
        partial(TransactionalFileSink, f"{OUT}/counter"),
        inputs={"counter": fields("key")},
    )
)
