"""A fused exactly-once DSL pipeline: log -> map -> sink, all in one instance.

Records are [key, seq] in HW_TEST_LOG (4 partitions, as the integration tests write
them); the sink step appends each row as a JSON line to HW_TEST_OUT/rows.jsonl.
The whole chain fuses into one component with one task, so every container past
the first is empty. (The sink is a plain function, so only a run without
rollbacks is exactly once at the file: what the tests here do.)
"""

from __future__ import annotations

import json
import os
from functools import partial
from typing import Any

from headwater import Reliability
from headwater.common.connectors import LogSpout
from headwater.dsl import Pipeline

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")


class Records(LogSpout):
    outputs = ("key", "seq")


class Rows:
    """Appends each value as one JSON line, flushed at once."""

    def __init__(self) -> None:
        self.file: Any = None

    def __call__(self, value: Any) -> None:
        if self.file is None:
            self.file = open(os.path.join(OUT, "rows.jsonl"), "a", encoding="utf-8")  # noqa: SIM115
        self.file.write(json.dumps(value) + "\n")
        self.file.flush()


p = Pipeline(
    "fused_eo",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
(
    p.source("records", partial(Records, LOG, 4))
    .map("row", lambda r: [r[0], r[1]])
    .sink("rows", Rows())
)
topology = p.build()
