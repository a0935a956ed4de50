"""Word count for benchmarking: sentences -> split (shuffle) -> count (fields on word).

Configured by environment variables, read at import time (the runner sets
them; every process of the cluster imports this file with the same values):

``BENCH_MODE``       ``atmostonce`` (default) or ``atleastonce``
``BENCH_BATCH``      ``headwater.batch.size`` (runtime default when unset)
``BENCH_LINGER_MS``  ``headwater.batch.linger.ms`` (runtime default when unset)
``BENCH_PENDING``    ``topology.max.spout.pending`` under at-least-once (default 10000)
``BENCH_RATE``       offered sentences/s per spout task; 0 (default) = as fast as allowed
``BENCH_PAR``        parallelism of every component (default 2)
``BENCH_OUT``        directory for latency samples (none recorded when unset)
``BENCH_LAT_EVERY``  record the latency of one word in N (default 16)

The spout puts its emit wall-clock time (``time.time_ns()``) into each
sentence; split forwards it with every word; count appends
``(receive_ns, latency_ns)`` pairs as int64 to ``BENCH_OUT/lat-<task>.bin``
every tick (1 s) and on close. Wall clocks agree across processes on one host.
"""

from __future__ import annotations

import os
import time
from array import array
from typing import Any

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, fields, shuffle

CORPUS = [
    "the pump on line three is running hot",
    "humidity in greenhouse two is rising",
    "the tractor reported low fuel",
    "line three pump vibration is normal",
    "soil moisture in field seven dropped below the threshold",
    "gateway four lost its uplink for ten seconds",
    "the cold room door has been open for five minutes",
    "battery voltage on sensor twelve is low",
]
WORDS_PER_SENTENCE = sum(len(s.split()) for s in CORPUS) / len(CORPUS)

MODE = os.environ.get("BENCH_MODE", "atmostonce")
if MODE not in ("atmostonce", "atleastonce"):
    raise ValueError(f"BENCH_MODE={MODE!r}: use atmostonce or atleastonce")
ACKING = MODE == "atleastonce"
RATE = float(os.environ.get("BENCH_RATE", "0"))
PAR = int(os.environ.get("BENCH_PAR", "2"))
OUT = os.environ.get("BENCH_OUT", "")
LAT_EVERY = max(1, int(os.environ.get("BENCH_LAT_EVERY", "16")))
MAX_CATCH_UP = 200  # sentences emitted by one next_tuple call at a fixed rate


class Sentences(Spout):
    outputs = ("sentence", "emit_ns")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.n = ctx.component_index * 3  # spouts start at different sentences
        self.interval_ns = int(1e9 / RATE) if RATE > 0 else 0
        self.next_ns = 0

    def activate(self) -> None:
        self.next_ns = time.time_ns()

    def next_tuple(self) -> None:
        emit = self.ctx.emit
        if not self.interval_ns:
            self.n += 1
            sentence = CORPUS[self.n % len(CORPUS)]
            if ACKING:
                emit([sentence, time.time_ns()], tup_id=self.n)
            else:
                emit([sentence, time.time_ns()])
            return
        now = time.time_ns()
        if self.next_ns == 0:
            self.next_ns = now
        k = 0
        while self.next_ns <= now and k < MAX_CATCH_UP:
            self.n += 1
            k += 1
            sentence = CORPUS[self.n % len(CORPUS)]
            if ACKING:
                emit([sentence, time.time_ns()], tup_id=self.n)
            else:
                emit([sentence, time.time_ns()])
            self.next_ns += self.interval_ns
        if now - self.next_ns > 10_000_000:  # more than 10 ms behind the offered rate
            self.ctx.incr("behind_10ms")

    def on_fail(self, tup_id: Any) -> None:
        self.ctx.incr("failed_trees")


class Split(Bolt):
    outputs = ("word", "emit_ns")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        sentence, emit_ns = tup.values
        emit = self.ctx.emit
        if ACKING:
            anchors = [tup]
            for word in sentence.split():
                emit([word, emit_ns], anchors=anchors)
            self.ctx.ack(tup)
        else:
            for word in sentence.split():
                emit([word, emit_ns])


class Count(Bolt):
    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.counts: dict[str, int] = {}
        self.seen = 0
        self.samples = array("q")
        self.path = os.path.join(OUT, f"lat-{ctx.task_id}.bin") if OUT else ""

    def process(self, tup: Tuple) -> None:
        word, emit_ns = tup.values
        counts = self.counts
        counts[word] = counts.get(word, 0) + 1
        self.seen += 1
        if self.path and self.seen % LAT_EVERY == 0:
            now = time.time_ns()
            self.samples.append(now)
            self.samples.append(now - emit_ns)
        if ACKING:
            self.ctx.ack(tup)

    def on_tick(self, tup: Tuple) -> None:
        self._write()

    def close(self) -> None:
        self._write()

    def _write(self) -> None:
        if self.path and self.samples:
            with open(self.path, "ab") as f:
                self.samples.tofile(f)
            self.samples = array("q")


_config: dict[str, Any] = {
    "topology.reliability.mode": (
        Reliability.AT_LEAST_ONCE if ACKING else Reliability.AT_MOST_ONCE
    ).value,
    "topology.tick.tuple.freq.secs": 1,
}
if ACKING:
    _config["topology.max.spout.pending"] = int(os.environ.get("BENCH_PENDING", "10000"))
if os.environ.get("BENCH_BATCH"):
    _config["headwater.batch.size"] = int(os.environ["BENCH_BATCH"])
if os.environ.get("BENCH_LINGER_MS"):
    _config["headwater.batch.linger.ms"] = float(os.environ["BENCH_LINGER_MS"])

topology = (
    Topology("bench-wordcount", config=_config)
    .add_spout("sentences", Sentences, parallelism=PAR)
    .add_bolt("split", Split, parallelism=PAR, inputs={"sentences": shuffle()})
    .add_bolt("count", Count, parallelism=PAR, inputs={"split": fields("word")})
)
