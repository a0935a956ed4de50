"""A DSL step that raises on a record: that step is retried, then the record is dead-lettered."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from headwater import DEAD_LETTERS, DeadLetter
from headwater.common.dsl._fused import _Chain
from headwater.common.dsl._keyed_ops import KeyedFlatMapOp, ReduceByKeyOp
from headwater.common.dsl._ops import FilterOp, FlatMapOp, KeyByOp, MapOp, SinkOp
from headwater.dsl import Pipeline
from headwater.testing import TestContext


def emitted(ctx: TestContext) -> list[list[Any]]:
    """What the chain emitted, each as ``[stream, *values]``."""
    return [[e.stream, *e.values] for e in ctx.emitted]


def _poison(key: str) -> Any:
    calls: Counter[str] = Counter()

    def fn(value: dict[str, Any]) -> dict[str, Any]:
        calls[value["k"]] += 1
        if value["k"] == key:
            raise KeyError(key)
        return value

    return fn, calls


def test_a_step_that_raises_on_one_key_dead_letters_it_and_goes_on() -> None:
    ctx = TestContext()
    seen: Counter[str] = Counter()

    def count(state: int | None, value: dict[str, Any]) -> tuple[int, list[Any]]:
        seen[value["k"]] += 1
        return (state or 0) + 1, [value]

    fn, calls = _poison("b")
    ops = [
        KeyByOp("by_k", lambda v: v["k"]),
        KeyedFlatMapOp("count", count),  # stateful, before the failing step: runs once
        MapOp("check", fn),
        FilterOp("keep", lambda v: True),
    ]
    chain = _Chain(ops, ctx)
    for k in "abcb":
        chain.first(None, {"k": k})
    assert [e[1] for e in emitted(ctx)] == ["a", "c"]
    assert [(d[0], d[1], d[3]) for d in ctx.dead_letters] == [
        ("check", "KeyError: 'b'", {"k": "b"})
    ] * 2
    assert "in fn" in ctx.dead_letters[0][2]
    assert calls == {"a": 1, "b": 8, "c": 1}  # 1 + 3 retries per poison record
    assert seen == {"a": 1, "b": 2, "c": 1}  # the steps before it are not run again
    assert dict(ctx.keyed["count"]) == {"a": 1, "b": 2, "c": 1}
    assert (ctx.retries, ctx.retry.dead_letters) == (6, 2)


def test_a_retry_that_works_processes_the_record_once() -> None:
    ctx = TestContext()
    attempts: Counter[int] = Counter()

    def flaky(v: int) -> list[int]:
        attempts[v] += 1
        if v == 2 and attempts[v] < 3:
            raise ValueError("try again")
        return [v, v * 10]

    totals: list[int] = []
    chain = _Chain(
        [
            FlatMapOp("fan", flaky),
            ReduceByKeyOp("sum", lambda a, b: a + b),
            SinkOp("out", totals.append),
        ],
        ctx,
    )
    for v in (1, 2, 3):
        chain.first("k", v)
    assert totals == [1, 11, 13, 33, 36, 66]  # 2 and 20 counted once
    assert ctx.dead_letters == [] and ctx.retries == 2
    chain.settle()  # a sink counts per frame: the retried records at once, the rest here
    assert ctx.counters == {"records:out": 6}


def test_dead_letter_skips_the_retries_in_a_keyed_step() -> None:
    ctx = TestContext()

    def dedup(last: int | None, seq: int) -> tuple[int | None, list[int]]:
        if last is not None and seq - last > 100:
            raise DeadLetter(f"seq {seq} too far ahead of {last}")
        return seq, [seq]

    chain = _Chain([KeyedFlatMapOp("dedup", dedup)], ctx)
    for seq in (1, 2, 99_999_999, 3):
        chain.first("sensor", seq)
    assert [e[2] for e in emitted(ctx)] == [1, 2, 3]  # the sensor is not silenced
    assert ctx.dead_letters == [["dedup", "seq 99999999 too far ahead of 2", "", 99_999_999]]
    assert ctx.retries == 0


def test_without_a_retrying_context_the_exception_goes_up() -> None:
    class Bare(TestContext):
        def __getattribute__(self, name: str) -> Any:
            if name == "retry_record":
                raise AttributeError(name)
            return super().__getattribute__(name)

    chain = _Chain([MapOp("boom", lambda v: 1 // v)], Bare())
    with pytest.raises(ZeroDivisionError):
        chain.first(None, 0)


def test_a_pipeline_names_its_dead_letter_sink() -> None:
    from headwater.common.connectors import TransactionalFileSink

    p = Pipeline("p")
    src = p.from_collection("src", [1, 2]).map("inv", lambda v: 1 / v)
    src.key_by("k", lambda v: v).reduce_by_key("total", lambda a, b: a + b).sink("out", print)
    p.dead_letters("dead", lambda: TransactionalFileSink("/tmp/unused"))
    t = p.build()
    assert t.dead_letters == "dead"
    dead = t.component("dead")
    # the fused source (src, inv, k) and the keyed chain (total, out) feed it
    assert [(i.component, i.stream) for i in dead.inputs] == [
        ("src", DEAD_LETTERS),
        ("total", DEAD_LETTERS),
    ]


def test_a_generator_that_raises_half_way_emits_its_items_once() -> None:
    ctx = TestContext()
    attempts: Counter[int] = Counter()

    def half(v: int) -> Any:
        attempts[v] += 1
        yield v
        if attempts[v] < 2:
            raise ValueError("half way")
        yield v * 10

    out: list[int] = []
    chain = _Chain([FlatMapOp("fan", half), SinkOp("out", out.append)], ctx)
    chain.first("k", 1)
    assert out == [1, 10] and ctx.dead_letters == []


def test_an_os_error_is_the_environments_fault_and_goes_up() -> None:
    """A database briefly down is no poison record: the instance restarts and replays it."""
    ctx = TestContext()

    def down(v: int) -> int:
        raise ConnectionRefusedError("db:5432")

    chain = _Chain([MapOp("write", down), SinkOp("out", lambda v: None)], ctx)
    with pytest.raises(ConnectionRefusedError):
        chain.first("k", 1)
    assert ctx.dead_letters == [] and ctx.retries == 0
