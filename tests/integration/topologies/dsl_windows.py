"""A windowed DSL pipeline: readings -> valid -> by_sensor -> 10 s windows -> rows -> file sink.

DSL_OUT: output folder. DSL_COUNT: readings (one a second, three sensors in turn).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from headwater import Reliability
from headwater.common.connectors import TransactionalFileSink
from headwater.dsl import Pipeline, Tumbling

OUT = os.environ.get("DSL_OUT", "/tmp/hw-dsl-out")
COUNT = int(os.environ.get("DSL_COUNT", "300"))


def readings() -> list[dict[str, Any]]:
    rows = [{"sensor": f"s{i % 3}", "ts": i * 1000, "v": i} for i in range(COUNT)]
    rows.insert(COUNT // 2, {"sensor": "s0", "ts": 5_000, "v": -1})  # invalid: filtered out
    return rows  # the end of the collection closes every window (its watermark: end of time)


def add(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    return {**a, "v": a["v"] + b["v"], "n": a.get("n", 1) + b.get("n", 1)}


p = Pipeline(
    "dslwin",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
(
    p.from_collection("readings", readings())
    .filter("valid", lambda r: r["v"] >= 0)
    .key_by("by_sensor", lambda r: r["sensor"])
    .window(
        "per_10s", Tumbling(10_000), timestamp=lambda r: r["ts"], out_of_orderness=0, parallelism=2
    )
    .reduce("totals", add)
    .map("row", lambda w: [w["key"], w["start"], w["value"]["v"], w["value"].get("n", 1)])
    .to("sink", partial(TransactionalFileSink, OUT))
)
topology = p.build()
