"""A partitioned DSL pipeline: every task of one component runs it all over its own keys.

readings (task i: the sensors ``partition_of`` gives to i, and one stray reading of
another task's sensor) -> valid -> by_sensor (``partitioned=True``) -> 10 s windows ->
rows -> a sink appending to DSL_OUT/rows-<pid>.jsonl; the strays go to the dead
letters (DSL_OUT/dead-<pid>.jsonl). DSL_COUNT: readings (one a second, six sensors in
turn). DSL_EXACTLY_ONCE=1: exactly once, checkpoints every second.
"""

from __future__ import annotations

import json
import os
from typing import Any

from headwater import Bolt, Context, Reliability, Spout, Tuple
from headwater.dsl import Pipeline, Tumbling, partition_of

OUT = os.environ.get("DSL_OUT", "/tmp/hw-dsl-part")
COUNT = int(os.environ.get("DSL_COUNT", "300"))
SENSORS = 6
TASKS = 2
STRAY = 1000  # the value of a stray reading


def readings() -> list[dict[str, Any]]:
    return [{"sensor": f"s{i % SENSORS}", "ts": i * 1000, "v": i} for i in range(COUNT)]


def _append(kind: str, row: Any) -> None:
    with open(os.path.join(OUT, f"{kind}-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")


class PartitionSource(Spout):
    """Task i's readings, a few a call; its offset is its state (exactly once)."""

    def open(self, ctx: Context) -> None:
        self.ctx, self.state = ctx, ctx.state
        n, i = len(ctx.component_tasks(ctx.component)), ctx.component_index
        mine = [r for r in readings() if partition_of(r["sensor"], n) == i]
        other = next(r for r in readings() if partition_of(r["sensor"], n) != i)
        mine.insert(len(mine) // 2, {**other, "v": STRAY})  # not this task's key
        self.items = mine

    def exhausted(self) -> bool:
        return int(self.state.get("offset", 0)) >= len(self.items)

    def next_tuple(self) -> None:
        offset = int(self.state.get("offset", 0))
        for item in self.items[offset : offset + 8]:
            self.ctx.emit([item])
        self.state["offset"] = min(len(self.items), offset + 8)


class DeadLetters(Bolt):
    def process(self, tup: Tuple) -> None:
        _append("dead", list(tup.values))


config: dict[str, Any] = {"topology.reliability.mode": Reliability.AT_MOST_ONCE.value}
if os.environ.get("DSL_EXACTLY_ONCE") == "1":
    config = {
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    }
p = Pipeline("dslpart", config=config)
(
    p.source("readings", PartitionSource, parallelism=TASKS)
    .filter("valid", lambda r: r["v"] >= 0)
    .key_by("by_sensor", lambda r: r["sensor"], partitioned=True)
    .window("per_10s", Tumbling(10_000), timestamp=lambda r: r["ts"])
    .aggregate("totals", lambda: [0, 0], lambda a, r: [a[0] + r["v"], a[1] + 1])
    .map("row", lambda w: [w["key"], w["start"], *w["value"]])
    .sink("out", lambda row: _append("rows", row))
)
p.dead_letters("dead", DeadLetters)
topology = p.build()
