"""A spout feeding a bolt that cannot start, in the mode HW_TEST_MODE names.

HW_TEST_BREAK says where the bolt raises: ``init`` (its constructor, the default)
or ``open``. The spout emits a few numbers, so instances do start and connect.
"""

from __future__ import annotations

import os

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, shuffle

MODE = os.environ.get("HW_TEST_MODE", Reliability.AT_LEAST_ONCE.value)
BREAK = os.environ.get("HW_TEST_BREAK", "init")


class Numbers(Spout):
    outputs = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.n = 0

    def next_tuple(self) -> None:
        if self.n < 100:
            self.ctx.emit([self.n], tup_id=self.n)
            self.n += 1


class Broken(Bolt):
    def __init__(self) -> None:
        if BREAK == "init":
            raise RuntimeError("the model file is missing")

    def open(self, ctx: Context) -> None:
        if BREAK == "open":
            raise ConnectionError("the database refused the connection")
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.ctx.ack(tup)


topology = (
    Topology(
        "broken",
        config={
            "topology.reliability.mode": MODE,
            "topology.stateful.checkpoint.interval.seconds": 1,
        },
    )
    .add_spout("numbers", Numbers)
    .add_bolt("model", Broken, inputs={"numbers": shuffle()})
)
