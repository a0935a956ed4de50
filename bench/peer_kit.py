"""What the peer runners of ``bench/peers.py`` share: the data file, the start and end marks.

Every runner reads ``BENCH_DATA`` (msgpack batches), writes ``BENCH_OUT.start``
(wall clock) before it hands on the first batch, and writes its results'
summary with the end time to ``BENCH_OUT`` once its sink holds ``BENCH_EXPECT``
records (Bytewax, one file per worker: ``BENCH_OUT.wN``, at the end of input).
Here: the batches and the Headwater source and sink; ``peer_bytewax`` has
Bytewax's.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgpack

from headwater import Context, Spout

DATA = os.environ.get("BENCH_DATA", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
EXPECT = int(os.environ.get("BENCH_EXPECT", "0"))
Summary = Callable[[list[Any]], dict[str, Any]]


def read_batches(path: str | Path) -> Iterator[list[Any]]:
    with open(path, "rb") as f:
        yield from msgpack.Unpacker(f, raw=False, use_list=True)


def timed_batches(path: str | Path = DATA) -> Iterator[list[Any]]:
    """The data's batches, noting the wall clock when the first is handed on."""
    for i, batch in enumerate(read_batches(path)):
        if i == 0:
            Path(OUT + ".start").write_text(repr(time.time()))
        yield batch


def write_result(path: str, summary: dict[str, Any]) -> None:
    with open(path, "w") as f:
        json.dump({"end": time.time(), **summary}, f)


class BatchSpout(Spout):
    """Headwater's source: each item of the data's batches, a batch per call; bounded (the
    end of input is the end of time for event-time windows)."""

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.batches = timed_batches()
        self.done = False

    def exhausted(self) -> bool:
        return self.done

    def next_tuple(self) -> None:
        batch = None if self.done else next(self.batches, None)
        if batch is None:
            self.done = True
            return
        emit = self.ctx.emit
        for item in batch:
            emit([item])


class Collect:
    """Headwater's sink step: keeps what arrives; writes the summary once it has EXPECT."""

    def __init__(self, summary: Summary) -> None:
        self.summary = summary
        self.results: list[Any] = []

    def __call__(self, result: Any) -> None:
        self.results.append(tuple(result))
        if len(self.results) == EXPECT:
            write_result(OUT, self.summary(self.results))
