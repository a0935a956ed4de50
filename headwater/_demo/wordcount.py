"""The demo topology: sentences -> split -> count, at least once."""

from __future__ import annotations

import itertools

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, fields, shuffle

SENTENCES = [
    "the pump on line three is running hot",
    "humidity in greenhouse two is rising",
    "the tractor reported low fuel",
    "line three pump vibration is normal",
]


class Sentences(Spout):
    outputs = ("sentence",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.source = itertools.cycle(SENTENCES)
        self.n = 0

    def next_tuple(self) -> None:
        self.n += 1
        self.ctx.emit([next(self.source)], tup_id=self.n)


class Split(Bolt):
    outputs = ("word",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        for word in tup.values[0].split():
            self.ctx.emit([word], anchors=[tup])
        self.ctx.ack(tup)


class Count(Bolt):
    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts: dict[str, int] = {}

    def process(self, tup: Tuple) -> None:
        word = tup.values[0]
        self.counts[word] = self.counts.get(word, 0) + 1
        self.ctx.ack(tup)


topology = (
    Topology(
        "demo-wordcount",
        config={
            "topology.reliability.mode": Reliability.AT_LEAST_ONCE.value,
            "topology.max.spout.pending": 2000,
        },
    )
    .add_spout("sentences", Sentences, parallelism=1)
    .add_bolt("split", Split, parallelism=2, inputs={"sentences": shuffle()})
    .add_bolt("count", Count, parallelism=2, inputs={"split": fields("word")})
)
