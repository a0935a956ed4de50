"""The exactly-once kill test's pipeline in the DSL: log -> key -> 100-seq windows -> sink.

Records are [key, seq] (seq counts per key, in order within a partition);
windows are tumbling over seq (the event time). HW_TEST_LOG, HW_TEST_OUT,
HW_TEST_RATE (records/s per source task) as in exactly_once.py.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from headwater import Reliability
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.dsl import Pipeline, Tumbling

LOG = os.environ.get("HW_TEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")
RATE = float(os.environ.get("HW_TEST_RATE", "0"))
WINDOW = 100
OUT_OF_ORDER = 1000  # a source task reads two partitions in turns: they drift apart a little


def count_sum(a: list[int], b: list[int]) -> list[int]:
    return [a[0] + b[0], a[1] + b[1]]


class Records(LogSpout):
    outputs = ("key", "seq")


p = Pipeline(
    "dsl_exactly_once",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
(
    p.source("records", partial(Records, LOG, 4, RATE), parallelism=2)
    .key_by("by_key", lambda r: r[0])
    .map("one", lambda r: [r[1], 1, r[1]])  # [seq, count, sum]
    .window(
        "per_100",
        Tumbling(WINDOW),
        timestamp=lambda v: v[0],
        out_of_orderness=OUT_OF_ORDER,
        parallelism=2,
    )
    .reduce("count_sum", lambda a, b: [max(a[0], b[0]), *count_sum(a[1:], b[1:])])
    .map("row", lambda w: [w["key"], w["start"] // WINDOW, *w["value"][1:]])
    .to("sink", partial(TransactionalFileSink, OUT))
)
topology = p.build()


def expected(keys: int, per_key: int) -> list[tuple[Any, ...]]:
    """Rows of the windows the final watermark closes (the last ones stay open)."""
    closed = (per_key - 1 - OUT_OF_ORDER) // WINDOW
    return sorted(
        (f"k{k}", w, WINDOW, sum(range(w * WINDOW, (w + 1) * WINDOW)))
        for k in range(keys)
        for w in range(closed)
    )
