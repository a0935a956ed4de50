"""The IoT pipeline as a Headwater DSL pipeline (``bench/iot.py`` runs it on a LocalCluster).

Fused as the DSL does it: readings -> parse -> valid -> sensor in one process,
the keyed window -> flag -> sink in another, one stream-manager hop between.
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bench.iot.functions import (
    WINDOW_MS,
    add,
    event_ms,
    flag,
    merge,
    parse,
    read_batches,
    sensor,
    summary,
    valid,
    zero,
)
from headwater import Context, Spout
from headwater.dsl import Pipeline, Tumbling

DATA = os.environ.get("BENCH_DATA", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
EXPECT = int(os.environ.get("BENCH_EXPECT", "0"))


class Readings(Spout):
    """The data file's payloads, a batch per call; bounded (the end of input ends windows)."""

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.batches = read_batches(DATA)
        self.done = False
        self.started = False

    def exhausted(self) -> bool:
        return self.done

    def next_tuple(self) -> None:
        if self.done:
            return
        batch = next(self.batches, None)
        if batch is None:
            self.done = True
            return
        if not self.started:
            self.started = True
            with open(OUT + ".start", "w") as f:
                f.write(repr(time.time()))
        emit = self.ctx.emit
        for payload in batch:
            emit([payload])


class Collect:
    """The sink: keeps what arrives; writes the summary once every window has."""

    def __init__(self) -> None:
        self.results: list[Any] = []

    def __call__(self, result: Any) -> None:
        self.results.append(tuple(result))
        if len(self.results) == EXPECT:
            with open(OUT, "w") as f:
                json.dump({"end": time.time(), **summary(self.results)}, f)


pipeline = Pipeline("iotbench")
(
    pipeline.source("readings", Readings)
    .map("parse", parse)
    .filter("valid", valid)
    .key_by("sensor", sensor)
    .window("window", Tumbling(WINDOW_MS), timestamp=event_ms)
    .aggregate("stats", zero, add, merge)
    .map("flag", lambda w: flag(w["key"], w["start"], w["value"]))
    .sink("out", Collect())
)
topology = pipeline.build()
