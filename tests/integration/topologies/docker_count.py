"""Counts for the Docker scheduler's test: two spout tasks emit range(N) between them, paced,
and two tally tasks count what they take (``user:seen``, ``user:sum``), by key.

Everything it reports leaves through metrics (its containers' files are inside Docker
containers); its limits are the Docker scheduler's container config."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from headwater import Bolt, Context, Spout, Topology, Tuple, fields

N = 600
RATE = 40.0  # per spout task, per second: about 8 s for all of them
CPU = 0.5
RAM = 512 << 20


class Numbers(Spout):
    outputs: ClassVar[Sequence[str]] = ("seq", "key")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        tasks = len(ctx.component_tasks(ctx.component))
        self.todo = list(range(ctx.component_index, N, tasks))[::-1]
        self.start = time.monotonic()
        self.sent = 0

    def next_tuple(self) -> None:
        if self.todo and self.sent < (time.monotonic() - self.start) * RATE:
            seq = self.todo.pop()
            self.sent += 1
            self.ctx.emit([seq, seq % 7])
            self.ctx.incr("emitted")


class Tally(Bolt):
    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.ctx.incr("seen")
        self.ctx.incr("sum", tup.values[0])


topology = (
    Topology("dockercount")
    .add_spout("numbers", Numbers, parallelism=2)
    .add_bolt("tally", Tally, parallelism=2, inputs={"numbers": fields("key")})
    .with_config(**{"headwater.container.cpu": CPU, "headwater.container.ram.bytes": RAM})
)
