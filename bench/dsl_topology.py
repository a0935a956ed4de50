"""Bench topology: a 5-step DSL chain, fused (BENCH_FUSE=1) or a component per step (0).

numbers (counter spout) -> parse -> keep -> scale -> label -> sink (counts records)
"""

from __future__ import annotations

import os

from headwater import Context, Spout
from headwater.dsl import Pipeline


class Numbers(Spout):
    """An endless counter, 256 records per call."""

    outputs = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx, self.n = ctx, 0

    def next_tuple(self) -> None:
        emit = self.ctx.emit
        for n in range(self.n, self.n + 256):
            emit([str(n)])
        self.n += 256


def _discard(value: object) -> None:
    pass


p = Pipeline(
    "dslbench",
    config={"topology.reliability.mode": "ATMOST_ONCE"},
    fuse=os.environ.get("BENCH_FUSE", "1") == "1",
)
(
    p.source("numbers", Numbers)
    .map("parse", int)
    .filter("keep", lambda n: n % 10 != 0)
    .map("scale", lambda n: n * 0.5)
    .map("label", lambda x: {"x": x, "big": x > 1000})
    .sink("sink", _discard)
)
topology = p.build()
