"""``key_by(..., partitioned=True)``: a stream already on its key's task fuses its keyed
steps, event-time windows included, into the source's chain; a misrouted key is
dead-lettered with its reason."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from headwater import Context, Spout
from headwater.common.api import Stream, fields
from headwater.common.dsl._fused import _Chain
from headwater.common.dsl._ops import MapOp, PartitionedKeyByOp
from headwater.common.plan._routing import make_selector
from headwater.dsl import Pipeline, Tumbling, partition_of
from headwater.testing import TestContext, run_main

KEYS = [f"s{i}" for i in range(10)]
READINGS: list[dict[str, Any]] = [{"k": KEYS[i % len(KEYS)], "ts": i, "v": 1} for i in range(200)]


class PartSource(Spout):
    """Task i of n emits the readings whose key is partition i (as a Kafka partition would
    hold them), plus, if ``stray``, one reading of another task's key."""

    def __init__(self, stray: bool = False) -> None:
        self.stray = stray

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        n, i = len(ctx.component_tasks(ctx.component)), ctx.component_index
        self.items = [r for r in READINGS if partition_of(r["k"], n) == i]
        if self.stray:
            self.items.append(next(r for r in READINGS if partition_of(r["k"], n) != i))
        self.pos = 0

    def exhausted(self) -> bool:
        return self.pos >= len(self.items)

    def next_tuple(self) -> None:
        for item in self.items[self.pos : self.pos + 16]:
            self.ctx.emit([item])
        self.pos += 16


def _pipeline(
    partitioned: bool, out: list[Any], with_stray: bool = False, fuse: bool = True
) -> Pipeline:
    p = Pipeline("part", fuse=fuse)
    (
        p.source("readings", lambda: PartSource(with_stray), parallelism=2)
        .map("parse", dict)
        .key_by("by_k", lambda r: r["k"], partitioned=partitioned)
        .window("per_50", Tumbling(50), timestamp=lambda r: r["ts"])
        .reduce("total", lambda a, b: {**a, "v": a["v"] + b["v"]})
        .map("row", lambda w: (w["key"], w["start"], w["value"]["v"]))
        .sink("out", out.append)
    )
    return p


def test_a_window_after_a_partitioned_key_by_fuses_into_the_source_chain() -> None:
    topology = _pipeline(True, []).build()
    assert [(c.name, c.config["headwater.dsl.steps"]) for c in topology.components] == [
        ("readings", ("readings", "parse", "by_k", "per_50", "total", "row", "out"))
    ]
    (only,) = topology.components
    assert not any(s.name.startswith("wm:") for s in only.streams)  # its own task's time
    assert only.parallelism == 2


def test_without_partitioned_the_window_is_an_exchange_away() -> None:
    topology = _pipeline(False, []).build()
    assert [c.config["headwater.dsl.steps"] for c in topology.components] == [
        ("readings", "parse", "by_k"),
        ("per_50", "total", "row", "out"),
    ]


def test_partitioned_and_exchanged_pipelines_count_the_same_windows() -> None:
    fused: list[Any] = []
    exchanged: list[Any] = []
    run_main(_pipeline(True, fused))
    run_main(_pipeline(False, exchanged))
    expected = Counter((r["k"], int(r["ts"]) - int(r["ts"]) % 50) for r in READINGS)
    assert sorted(fused) == sorted(exchanged) == sorted((k, s, n) for (k, s), n in expected.items())


def test_unfused_a_partitioned_key_by_gets_its_records_by_key() -> None:
    """fuse=False: the key_by is an exchange away from its source, which routes each record
    to its key's task as the step declares; nothing is misrouted, every window is exact,
    the last ones too (the end of input crosses the two hops before the window)."""
    out: list[Any] = []
    run = run_main(_pipeline(True, out, fuse=False))
    expected = Counter((r["k"], int(r["ts"]) - int(r["ts"]) % 50) for r in READINGS)
    assert sorted(map(tuple, out)) == sorted((k, s, n) for (k, s), n in expected.items())
    assert run.dead_letters == []


def test_a_misrouted_key_goes_to_the_dead_letters_with_its_reason() -> None:
    out: list[Any] = []
    run = run_main(_pipeline(True, out, with_stray=True))
    assert sum(n for _, _, n in out) == len(READINGS)  # the strays counted nowhere
    letters = [d for d in run.dead_letters if d[0] == "by_k"]
    assert len(letters) == 2  # one per task
    for _, reason, _, record in letters:
        assert "belongs to partition" in reason and "partition_of" in reason
        assert record in READINGS


def test_the_check_is_the_fields_groupings_mapping() -> None:
    rng = random.Random(3)
    keys: list[Any] = [rng.random() for _ in range(50)] + [f"k{i}" for i in range(50)]
    keys += [i for i in range(50)] + [("a", i) for i in range(20)]
    for n in (1, 2, 3, 7):
        tasks = [10 + t for t in range(n)]
        select = make_selector(
            fields("key"), Stream(("key", "value")), tasks, None, "c", random.Random(0)
        )
        for key in keys:
            assert select([key, None], None) == [tasks[partition_of(key, n)]]


@pytest.mark.parametrize("index", [0, 1])
def test_a_chain_checks_each_key_against_its_task(index: int) -> None:
    ctx = TestContext(index=index)  # a component of two tasks (index 0 or 1 of it)
    ctx._ids = {"test": [1, 2]}
    ops = [PartitionedKeyByOp("by_k", lambda v: v["k"]), MapOp("id", lambda v: v)]
    chain = _Chain(ops, ctx)
    for k in KEYS * 2:
        chain.first(None, {"k": k})
    mine = [k for k in KEYS if partition_of(k, 2) == index]
    assert [e.values[0] for e in ctx.emitted] == mine * 2
    assert sorted(d[3]["k"] for d in ctx.dead_letters) == sorted(
        [k for k in KEYS if k not in mine] * 2
    )
    assert all(d[2] == "" or d[2] is None for d in ctx.dead_letters)  # at once, no traceback


def test_partition_of_needs_a_partition() -> None:
    with pytest.raises(ValueError):
        partition_of("a", 0)


@pytest.mark.parametrize(
    ("first", "stray", "n"),
    [(2, 2.0, 2), (0.0, -0.0, 3), ((1, "a"), (1.0, "a"), 2), (1, True, 3)],
)
def test_a_key_equal_to_a_checked_one_but_routed_elsewhere_is_still_a_stray(
    first: Any, stray: Any, n: int
) -> None:
    """Python calls 2 and 2.0 (or 1 and True, 0.0 and -0.0) the same dict key, but the fields
    grouping (msgpack bytes) routes them apart: the answer kept for one is not the other's."""
    index = partition_of(first, n)
    assert partition_of(stray, n) != index
    ctx = TestContext(index=index)
    ctx._ids = {"test": list(range(1, n + 1))}
    chain = _Chain([PartitionedKeyByOp("by_k", lambda v: v["k"])], ctx)
    chain.first(None, {"k": first})
    chain.first(None, {"k": stray})
    assert [e.values[0] for e in ctx.emitted] == [first]
    assert [d[3]["k"] for d in ctx.dead_letters] == [stray]


def test_the_end_of_input_crosses_stateless_hops_to_a_window() -> None:
    """A bounded source, then stateless steps at other parallelisms (each an exchange
    away), then a window: each hop forwards the end of input once every task feeding it has,
    so the window's last panes close too."""
    out: list[Any] = []
    p = Pipeline("hops")
    (
        p.from_collection("readings", READINGS)
        .map("parse", dict, parallelism=2)
        .filter("all", lambda r: True, parallelism=3)
        .key_by("by_k", lambda r: r["k"])
        .window("per_50", Tumbling(50), timestamp=lambda r: r["ts"])
        .reduce("total", lambda a, b: {**a, "v": a["v"] + b["v"]})
        .map("row", lambda w: (w["key"], w["start"], w["value"]["v"]))
        .sink("out", out.append)
    )
    topology = p.build()
    wm = {
        c.name: sorted(i.stream for i in c.inputs if i.stream.startswith("wm:"))
        for c in topology.components
    }
    assert wm == {"readings": [], "parse": ["wm:parse"], "all": ["wm:all"], "per_50": ["wm:per_50"]}
    run_main(p)
    expected = Counter((r["k"], int(r["ts"]) - int(r["ts"]) % 50) for r in READINGS)
    assert sorted(map(tuple, out)) == sorted((k, s, n) for (k, s), n in expected.items())
