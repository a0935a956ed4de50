"""Components shared by the integration tests' topology files.

Each file runs in every process of the cluster; results leave through files
in ``$HW_TEST_OUT`` (one JSON line per tuple, per task) and user counters.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from typing import Any, ClassVar

from headwater import Bolt, Context, Spout, Stream, Tuple

OUT = os.environ.get("HW_TEST_OUT", "")


class SeqSpout(Spout):
    """Emits ``[seq, key]`` for seq in this task's share of range(N), then stops.

    Tracked with ``tup_id=seq`` under at-least-once; failed tuples are replayed.
    ``RATE`` (per task, per second) paces emission when set.
    """

    outputs: ClassVar[Sequence[Stream | str]] = ("seq", "key")
    N = int(os.environ.get("HW_TEST_N", "600"))
    RATE = float(os.environ.get("HW_TEST_RATE", "0"))
    KEYS = 7

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        n_tasks = len(ctx.component_tasks(ctx.component))
        self.todo = list(range(ctx.component_index, self.N, n_tasks))[::-1]
        self.retry: list[int] = []
        self.start = time.monotonic()
        self.sent = 0

    def next_tuple(self) -> None:
        if self.RATE and self.sent >= (time.monotonic() - self.start) * self.RATE:
            return
        source = self.retry or self.todo
        if source:
            seq = source.pop()
            self.sent += 1
            self.emit(seq)

    def emit(self, seq: int) -> None:
        self.ctx.emit([seq, seq % self.KEYS], tup_id=seq)

    def on_fail(self, tup_id: Any) -> None:
        self.retry.append(tup_id)
        self.ctx.incr("replayed")


class RecordBolt(Bolt):
    """Writes every tuple's values to ``$HW_TEST_OUT/<component>-<task>.jsonl`` and acks it."""

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        path = os.path.join(OUT, f"{ctx.component}-{ctx.task_id}.jsonl")
        self.file = open(path, "a", buffering=1)  # noqa: SIM115 (closed in close())

    def process(self, tup: Tuple) -> None:
        self.file.write(json.dumps(tup.values) + "\n")
        self.ctx.ack(tup)

    def close(self) -> None:
        self.file.close()


class Words(Spout):
    outputs = ("word",)

    def next_tuple(self) -> None:
        pass


class Pass(Bolt):
    outputs = ("word",)

    def process(self, tup: Tuple) -> None:
        pass
