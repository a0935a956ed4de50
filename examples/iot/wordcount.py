"""Word count over gateway log lines: a bounded spout, at-least-once, native API.

    headwater run examples/iot/wordcount.py --containers 2 --duration 20

The spout replays a fixed corpus of gateway log lines ``WORDCOUNT_REPEAT``
times (default 500) and stops, at most ``WORDCOUNT_RATE`` lines a second per
spout task (default 50, so a 20 s run is still counting at its end and
``headwater deactivate`` visibly pauses it; 0: as fast as it can);
``split`` breaks lines into words (anchored,
so a lost word replays its line) and ``count`` keeps per-word totals. With
``WORDCOUNT_OUTPUT=DIR`` each count task writes its totals to
``DIR/count-<task>.json`` every second and on shutdown.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from pathlib import Path

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, fields, shuffle

CORPUS = [
    "gateway north reading temperature sensor ok",
    "gateway south reading humidity sensor ok",
    "gateway north reading pressure sensor late",
    "uplink north connected",
    "uplink south reconnecting after timeout",
    "gateway south reading temperature sensor ok",
]
REPEAT = int(os.environ.get("WORDCOUNT_REPEAT", "500"))
RATE = float(os.environ.get("WORDCOUNT_RATE", "50"))


def expected_counts(repeat: int = REPEAT) -> dict[str, int]:
    """What the topology must count: every word of the corpus, ``repeat`` times."""
    counts: Counter[str] = Counter()
    for line in CORPUS:
        counts.update(line.split())
    return {w: n * repeat for w, n in counts.items()}


class Lines(Spout):
    """Emits each corpus line REPEAT times, tracked, replaying failures."""

    outputs = ("line",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        # each spout task takes its share of the repeats
        tasks = ctx.component_tasks(ctx.component)
        share = range(ctx.component_index, REPEAT, len(tasks))
        self.todo = [(r, i) for r in share for i in range(len(CORPUS))]
        self.todo.reverse()
        self.retry: list[tuple[int, int]] = []
        self.next_at = time.monotonic()

    def next_tuple(self) -> None:
        source = self.retry or self.todo
        if source and RATE > 0:
            now = time.monotonic()
            if now < self.next_at:
                return
            self.next_at = max(self.next_at, now - 1.0) + 1.0 / RATE
        if source:
            msg_id = source.pop()
            self.ctx.emit([CORPUS[msg_id[1]]], tup_id=msg_id)

    def on_fail(self, tup_id: tuple[int, int]) -> None:
        self.retry.append(tuple(tup_id))  # type: ignore[arg-type]


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
        self.counts: Counter[str] = Counter()
        out = os.environ.get("WORDCOUNT_OUTPUT")
        self.out = Path(out) / f"count-{ctx.task_id}.json" if out else None

    def process(self, tup: Tuple) -> None:
        self.counts[tup.values[0]] += 1
        self.ctx.ack(tup)

    def on_tick(self, tup: Tuple) -> None:
        self._write()

    def close(self) -> None:
        self._write()

    def _write(self) -> None:
        if self.out is not None:
            tmp = self.out.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.counts))
            tmp.replace(self.out)


topology = (
    Topology(
        "wordcount",
        config={
            "topology.reliability.mode": Reliability.AT_LEAST_ONCE.value,
            "topology.max.spout.pending": 5000,
            "topology.message.timeout.secs": 10,
        },
    )
    .add_spout("lines", Lines, parallelism=2)
    .add_bolt("split", Split, parallelism=2, inputs={"lines": shuffle()})
    .add_bolt(
        "count",
        Count,
        parallelism=2,
        inputs={"split": fields("word")},
        config={"topology.tick.tuple.freq.secs": 1},
    )
)
