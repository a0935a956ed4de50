"""headwater.common.dsl._compile: a compiled run of steps does what the linked steps do.

Random chains of every compiled step kind, with linked steps between them, and
user functions that raise on some records (some only on the first try): the
records emitted, the dead letters, the counters and the keyed state must be the
same with the runs compiled as with every step linked.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from headwater.common.api import Spout
from headwater.common.api._state import UntrackedKeyedState
from headwater.common.dsl import _compile, _fused
from headwater.common.dsl._compile import compilable
from headwater.common.dsl._fused import Tap, _Chain
from headwater.common.dsl._fused_source import FusedSpout
from headwater.common.dsl._keyed_ops import KeyedFlatMapOp, ReduceByKeyOp
from headwater.common.dsl._ops import FilterOp, FlatMapOp, KeyByOp, LogOp, MapOp, Op, SinkOp
from headwater.testing import TestContext


class Flaky:
    """Raises on values whose ``% mod == hit``; on ``transient`` ones only the first time."""

    def __init__(self, fn: Callable[..., Any], mod: int, hit: int, transient: bool) -> None:
        self.fn, self.mod, self.hit, self.transient = fn, mod, hit, transient
        self.failed: set[Any] = set()

    def __call__(self, *args: Any) -> Any:
        probe = args[-1]
        hit = isinstance(probe, int) and probe % self.mod == self.hit
        if hit and (not self.transient or probe not in self.failed):
            self.failed.add(probe)
            raise ValueError(f"flaky on {probe}")
        return self.fn(*args)


def _keyed_step(state: Any, value: int) -> tuple[Any, list[int]]:
    total = (state or 0) + value
    return (None if total > 50 else total), [value, total]


def _ops(rng: random.Random, sink: list[Any]) -> list[Op]:
    """A random chain of 1-7 steps (a sink, if any, last)."""
    ops: list[Op] = []
    for i in range(rng.randint(1, 6)):
        flaky = rng.random() < 0.6
        mod, hit, transient = rng.randint(3, 7), rng.randint(0, 2), rng.random() < 0.5

        def wrap(
            fn: Callable[..., Any],
            flaky: bool = flaky,
            args: tuple[int, int, bool] = (mod, hit, transient),
        ) -> Callable[..., Any]:
            return Flaky(fn, *args) if flaky else fn

        kind = rng.choice(["map", "flat", "filter", "key", "reduce", "keyed", "log"])
        name = f"s{i}"
        if kind == "map":
            ops.append(MapOp(name, wrap(lambda v: v + 1)))
        elif kind == "flat":
            ops.append(FlatMapOp(name, wrap(lambda v: [v, v * 2] if v % 3 else [])))
        elif kind == "filter":
            ops.append(FilterOp(name, wrap(lambda v: v % 4 != 1)))
        elif kind == "key":
            ops.append(KeyByOp(name, wrap(lambda v: v % 5)))
        elif kind == "reduce":
            ops.append(ReduceByKeyOp(name, wrap(lambda a, b: a + b)))
        elif kind == "keyed":
            ops.append(KeyedFlatMapOp(name, _keyed_step))
        else:
            ops.append(LogOp(name))
    if rng.random() < 0.5:
        ops.append(SinkOp("out", sink.append))
    return ops


def _stamp(value: Any) -> int:
    """A downstream window's timestamp: none for some values (the window dead-letters them)."""
    if isinstance(value, int) and value % 11 == 0:
        raise KeyError("ts")
    return value if isinstance(value, int) else 0


def _run(seed: int, compiled: bool, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(_fused, "compilable", compilable if compiled else (lambda op: False))
    # a run's gathered output leaves every GATHER records too: every few, for half the seeds
    monkeypatch.setattr(_compile, "GATHER", 2 if seed % 2 else 1000)
    rng = random.Random(seed)
    sink: list[Any] = []
    ops = _ops(rng, sink)
    ctx = TestContext()
    if seed % 3 == 0:  # a task that never snapshots: its keyed state notes no keys
        for op in ops:
            if isinstance(op, ReduceByKeyOp | KeyedFlatMapOp):
                ctx.keyed[op.name] = UntrackedKeyedState()
    timed = rng.random() < 0.3
    taps = [Tap(_stamp, "wm:next")] if timed else []
    chain = _Chain(ops, ctx, taps)
    values = rng.sample(range(200), 60)
    # the compiled chain takes some records as frames of rows (``first_all``) or of columns
    # (``first_columns``), the linked one one by one
    frames = rng.choice(["rows", "columns", None])
    while values:
        n = rng.randint(1, 9)
        frame, values = values[:n], values[n:]
        if compiled and frames == "rows":
            chain.first_all([[v % 7, v] for v in frame])
        elif compiled and frames == "columns":
            chain.first_columns([v % 7 for v in frame], frame)
        else:
            for v in frame:
                chain.first(v % 7, v)
        if rng.random() < 0.2:
            chain.settle()
    chain.settle()
    return (
        [[e.stream, *e.values] for e in ctx.emitted],
        [(row[0], row[1], row[3]) for row in ctx.dead_letters],
        ctx.counters,
        {name: dict(state.items()) for name, state in ctx.keyed.items()},
        sink,
        {name: set(state._dirty) for name, state in ctx.keyed.items()},
    )


@pytest.mark.parametrize("seed", range(60))
def test_a_compiled_chain_does_what_the_linked_one_does(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    linked = _run(seed, False, monkeypatch)
    fast = _run(seed, True, monkeypatch)
    assert fast[:5] == linked[:5]
    # the keys marked changed since the last snapshot: those a step wrote, or more (a frame
    # of columns marks its keys when the run starts with a reduce_by_key)
    assert fast[5].keys() == linked[5].keys()
    assert all(fast[5][name] >= keys for name, keys in linked[5].items())


def test_the_generated_code_holds_no_name_a_pipeline_chose() -> None:
    """Step names are bound in the function's namespace, never written into its source."""
    import linecache

    ctx = TestContext()
    evil = 'x"); import os; os.system("echo owned'
    chain = _Chain([MapOp(evil, str.upper), KeyByOp(evil + "k", len)], ctx)
    chain.first(None, "ab")
    assert [e.values for e in ctx.emitted] == [[2, "AB"]]
    code = chain.first.__code__
    source = "".join(linecache.getlines(code.co_filename))
    assert source.startswith("def run(key, value):") and evil not in source


def test_a_source_s_records_are_counted_whichever_call_emitted_them() -> None:
    class Source(Spout):
        def open(self, ctx: Any) -> None:
            self.ctx = ctx

        def next_tuple(self) -> None:
            self.ctx.emit([1])

        def activate(self) -> None:
            self.ctx.emit([2])
            self.ctx.emit([3])

        def close(self) -> None:
            self.ctx.emit([4])

    ctx = TestContext()
    spout = FusedSpout(Source, lambda: [MapOp("m", lambda v: v), SinkOp("out", lambda v: None)])
    spout.open(ctx)
    spout.activate()
    assert ctx.counters == {"records:out": 2}
    spout.next_tuple()
    spout.close()
    assert ctx.counters == {"records:out": 4}


def test_the_generated_lines_are_forgotten_with_the_chain() -> None:
    import gc
    import linecache

    chain = _Chain([MapOp("m", str.upper), KeyByOp("k", len)], TestContext())
    filename = chain.first.__code__.co_filename
    assert linecache.getlines(filename)
    del chain
    gc.collect()
    assert filename not in linecache.cache


def test_a_frame_of_columns_into_a_reduce_marks_its_keys_and_counts_its_sink(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that starts with a reduce_by_key marks a frame's keys changed once, after the
    frame; a record whose key cannot be hashed still goes to the dead letters alone, and the
    sink's count leaves out the record it raised on."""

    def chain(sink: list[Any]) -> tuple[_Chain, TestContext]:
        ctx = TestContext()
        fussy = Flaky(sink.append, mod=5, hit=0, transient=False)
        ops: list[Op] = [ReduceByKeyOp("sum", lambda a, b: a + b), SinkOp("out", fussy)]
        return _Chain(ops, ctx), ctx

    keys: list[Any] = ["a", "b", ["not", "hashable"], "a", "c", "b"]
    values = [1, 2, 3, 4, 5, 6]
    linked_sink: list[Any] = []
    with monkeypatch.context() as patch:
        patch.setattr(_fused, "compilable", lambda op: False)
        linked, linked_ctx = chain(linked_sink)
    for key, value in zip(keys, values, strict=True):
        linked.first(key, value)
    linked.settle()
    sink: list[Any] = []
    fast, ctx = chain(sink)
    assert fast.first_columns.__name__ == "run_columns"
    fast.first_columns(keys, values)
    fast.settle()
    assert sink == linked_sink == [1, 2, 8] and ctx.counters == linked_ctx.counters
    assert ctx.counters["records:out"] == 3  # the sink raised on both fives
    assert [row[:2] for row in ctx.dead_letters] == [row[:2] for row in linked_ctx.dead_letters]
    assert len(ctx.dead_letters) == 3  # the unhashable key's record, then a's and c's five
    assert dict(ctx.keyed["sum"].items()) == {"a": 5, "b": 8, "c": 5}
    assert ctx.keyed["sum"]._dirty == {"a", "b", "c"}


def test_a_task_that_never_snapshots_notes_no_keys_and_counts_the_same() -> None:
    """An untracked keyed state (a topology that is not exactly-once) is written with no
    note of changed or mutable keys, compiled or linked, by frame or by record."""
    ctx = TestContext()
    ctx.keyed["sum"] = UntrackedKeyedState()
    chain = _Chain([ReduceByKeyOp("sum", lambda a, b: a + b), SinkOp("out", lambda v: None)], ctx)
    chain.first_columns(["a", "b", "a"], [[1], [2], [3]])  # lists: mutable values
    chain.first_all([["b", [4]]])
    chain.first("c", [5])
    chain.settle()
    state = ctx.keyed["sum"]
    assert dict(state.items()) == {"a": [1, 3], "b": [2, 4], "c": [5]}
    assert state._dirty == set() and state._mutable == set()
    assert ctx.counters == {"records:out": 5}
