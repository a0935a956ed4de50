"""A topology whose every task says who it is in its own log, for ``headwater logs``: each
prints ``logged: COMPONENT task T open`` once, then the spout ``logged: tick N`` about ten
times a second and each echo task ``logged: echo task T took N`` for what it takes."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import ClassVar

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle


class Ticks(Spout):
    outputs: ClassVar[Sequence[str]] = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.n = 0
        self.next = time.monotonic()
        print(f"logged: {ctx.component} task {ctx.task_id} open", flush=True)

    def next_tuple(self) -> None:
        if time.monotonic() >= self.next:
            self.next += 0.1
            self.n += 1
            print(f"logged: tick {self.n}", flush=True)
            self.ctx.emit([self.n])


class Echo(Bolt):
    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        print(f"logged: {ctx.component} task {ctx.task_id} open", flush=True)

    def process(self, tup: Tuple) -> None:
        print(f"logged: echo task {self.ctx.task_id} took {tup.values[0]}", flush=True)


topology = (
    Topology("logged")
    .add_spout("ticks", Ticks)
    .add_bolt("echo", Echo, parallelism=2, inputs={"ticks": shuffle()})
)
