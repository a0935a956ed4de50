"""Two independent paths: fast -> slow (congested) and steady -> steady_sink (paced)."""

from __future__ import annotations

import os
import time

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle

FAST_OFF = os.environ.get("HW_TEST_FAST_OFF") == "1"
STEADY_RATE = 1000.0  # tuples/s offered on the independent path
PAD = "x" * 100


class Fast(Spout):
    outputs = ("seq", "pad")

    def open(self, ctx: Context) -> None:
        self.ctx, self.seq = ctx, 0

    def next_tuple(self) -> None:
        if not FAST_OFF:
            for _ in range(100):
                self.seq += 1
                self.ctx.emit([self.seq, PAD])


class Slow(Bolt):
    """About 10k tuples/s: far slower than Fast."""

    def open(self, ctx: Context) -> None:
        self.n = 0

    def process(self, tup: Tuple) -> None:
        self.n += 1
        if self.n % 10 == 0:
            time.sleep(0.001)


class Steady(Spout):
    outputs = ("seq",)

    def open(self, ctx: Context) -> None:
        self.ctx, self.sent, self.start = ctx, 0, time.monotonic()

    def next_tuple(self) -> None:
        due = int((time.monotonic() - self.start) * STEADY_RATE)
        while self.sent < due:
            self.sent += 1
            self.ctx.emit([self.sent])


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


topology = (
    Topology(
        "backpressure",
        config={
            "headwater.stmgr.buffer.high.bytes": 256 << 10,
            "headwater.stmgr.buffer.low.bytes": 128 << 10,
            "headwater.instance.queue.high.bytes": 256 << 10,
            "headwater.instance.queue.low.bytes": 128 << 10,
        },
    )
    .add_spout("fast", Fast)
    .add_bolt("slow", Slow, inputs={"fast": shuffle()})
    .add_spout("steady", Steady)
    .add_bolt("steady_sink", Sink, inputs={"steady": shuffle()})
)
