"""headwater.common.plan._routing: selectors per grouping, and the Router."""

from __future__ import annotations

import random
import zlib
from collections import Counter
from typing import Any

import pytest

from headwater.common._exceptions import EmitError
from headwater.common.api import (
    DEAD_LETTERS,
    Bolt,
    Grouping,
    Input,
    Spout,
    Stream,
    Topology,
    all_tasks,
    custom,
    direct,
    fields,
    global_,
    none,
    shuffle,
)
from headwater.common.plan._routing import Router, key_hash, make_selector

STREAM = Stream(("word", "n", "extra"))


def _sel(grouping: Grouping, tasks: list[int], context: object = None) -> Any:
    return make_selector(grouping, STREAM, tasks, context, "consumer", random.Random(1))


# -- key_hash -------------------------------------------------------------------
def test_key_hash_is_a_literal_stable_value() -> None:
    # CRC-32 of the msgpack encoding; Python's salted hash() would differ per process
    assert key_hash("apple") == 2535392947
    assert key_hash("apple") == zlib.crc32(b"\xa5apple")
    assert key_hash(42) == 163128923
    assert key_hash(["a", 1]) == 3847662356
    assert key_hash(("a", 1)) == key_hash(["a", 1])


def test_key_hash_distinguishes_types() -> None:
    assert key_hash("1") != key_hash(1)
    assert key_hash(b"a") != key_hash("a")


# -- shuffle / none -------------------------------------------------------------
@pytest.mark.parametrize("grouping", [shuffle(), none()])
def test_shuffle_is_round_robin(grouping: Grouping) -> None:
    select = _sel(grouping, [4, 5, 6])
    picks = [tuple(select(["w", 1, None], None)) for _ in range(300)]
    assert all(len(p) == 1 for p in picks)
    counts = Counter(p[0] for p in picks)
    assert counts == {4: 100, 5: 100, 6: 100}
    flat = [p[0] for p in picks]
    for i in range(len(flat) - 2):
        assert sorted(flat[i : i + 3]) == [4, 5, 6]


def test_shuffle_start_depends_on_rng() -> None:
    starts = set()
    for seed in range(20):
        select = make_selector(shuffle(), STREAM, [1, 2, 3], None, "c", random.Random(seed))
        starts.add(select([], None)[0])
    assert starts == {1, 2, 3}


def test_shuffle_single_task() -> None:
    select = _sel(shuffle(), [9])
    assert [list(select([], None)) for _ in range(3)] == [[9], [9], [9]]


# -- fields ---------------------------------------------------------------------
def test_fields_sends_equal_keys_to_the_same_task() -> None:
    select = _sel(fields("word"), [1, 2, 3])
    for word in ["apple", "banana", "cherry", "date", "elder", "fig"]:
        first = list(select([word, 0, None], None))
        assert len(first) == 1
        for n in range(1, 20):
            assert list(select([word, n, {"other": n}], None)) == first


def test_fields_expected_literal_tasks() -> None:
    select = _sel(fields("word"), [3, 1, 2])  # tasks are sorted first
    got = {w: select([w, 0, None], None)[0] for w in ["apple", "banana", "cherry", "date"]}
    # key_hash % 3 -> apple 1, banana 1, cherry 2, date 0 over sorted tasks [1, 2, 3]
    assert got == {"apple": 2, "banana": 2, "cherry": 3, "date": 1}


def test_fields_multi_field_key() -> None:
    select = _sel(fields("word", "n"), [10, 11, 12, 13])
    expected = [10, 11, 12, 13][key_hash(["a", 1]) % 4]
    assert expected == 10  # literal: key_hash(["a", 1]) == 3847662356
    assert list(select(["a", 1, "x"], None)) == [expected]
    assert list(select(["a", 1, "y"], None)) == [expected]


def test_fields_field_order_in_stream_is_respected() -> None:
    select = _sel(fields("n"), [1, 2, 3])
    assert list(select(["ignored", "apple", None], None)) == [[1, 2, 3][key_hash("apple") % 3]]


def test_fields_spreads_many_keys() -> None:
    select = _sel(fields("word"), [1, 2, 3, 4])
    counts = Counter(select([f"key-{i}", 0, None], None)[0] for i in range(4000))
    assert set(counts) == {1, 2, 3, 4}
    assert min(counts.values()) > 800


# -- all / global ---------------------------------------------------------------
def test_all_sends_to_every_task() -> None:
    select = _sel(all_tasks(), [3, 1, 2])
    assert list(select(["w", 1, None], None)) == [1, 2, 3]
    assert list(select(["v", 2, None], None)) == [1, 2, 3]


def test_global_sends_to_lowest_task() -> None:
    select = _sel(global_(), [7, 5, 6])
    assert [list(select([i, i, i], None)) for i in range(5)] == [[5]] * 5


# -- direct ---------------------------------------------------------------------
def test_direct_sends_to_the_named_task() -> None:
    select = _sel(direct(), [4, 5])
    assert list(select(["w", 1, None], 5)) == [5]
    assert list(select(["w", 1, None], 4)) == [4]


def test_direct_without_task_reaches_nobody() -> None:
    assert list(_sel(direct(), [4, 5])(["w", 1, None], None)) == []


def test_direct_validates_the_task() -> None:
    select = _sel(direct(), [4, 5])
    with pytest.raises(EmitError) as info:
        select(["w", 1, None], 9)
    message = str(info.value)
    assert "direct_task 9" in message
    assert "'consumer'" in message
    assert "[4, 5]" in message


# -- custom ---------------------------------------------------------------------
class Recorder:
    def __init__(self, choice: list[int]) -> None:
        self.choice = choice
        self.prepared: list[tuple[object, str, str, list[int]]] = []
        self.seen: list[list[object]] = []

    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        self.prepared.append((context, component, stream, target_tasks))

    def choose_tasks(self, values: list[object]) -> list[int]:
        self.seen.append(values)
        return self.choice


def test_custom_prepare_gets_sorted_targets() -> None:
    rec = Recorder([2])
    ctx = object()
    select = _sel(custom(rec), [3, 1, 2], context=ctx)
    assert rec.prepared == [(ctx, "consumer", "default", [1, 2, 3])]
    assert list(select(["w", 1, None], None)) == [2]
    assert rec.seen == [["w", 1, None]]
    assert len(rec.prepared) == 1  # prepare runs once, not per tuple


def test_custom_may_choose_several_or_none() -> None:
    assert list(_sel(custom(Recorder([1, 3])), [1, 2, 3])([], None)) == [1, 3]
    assert list(_sel(custom(Recorder([])), [1, 2, 3])([], None)) == []


def test_custom_choice_is_validated() -> None:
    select = _sel(custom(Recorder([2, 9])), [1, 2, 3])
    with pytest.raises(EmitError) as info:
        select(["w", 1, None], None)
    message = str(info.value)
    assert "Recorder" in message
    assert "[9]" in message
    assert "'consumer'" in message


def test_unknown_grouping_kind() -> None:
    with pytest.raises(EmitError, match="unknown grouping 'bogus'"):
        _sel(Grouping("bogus"), [1])


# -- Router ---------------------------------------------------------------------
class Src(Spout):
    outputs = (Stream(("word",)), Stream(("reason",), name="error"))

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Any) -> None:
        pass


def _topology() -> Topology:
    return (
        Topology("t")
        .add_spout("src", Src)  # task 1
        .add_bolt("a", Sink, inputs={"src": global_()}, parallelism=2)  # tasks 2, 3
        .add_bolt("b", Sink, inputs={"src": all_tasks()}, parallelism=2)  # tasks 4, 5
        .add_bolt("errors", Sink, inputs={("src", "error"): shuffle()})  # task 6
    )


def test_router_selectors_per_stream() -> None:
    router = Router(_topology(), "src", None, seed=0)
    assert set(router.streams) == {"default", "error", DEAD_LETTERS}  # every one has it
    default = [list(s(["w"], None)) for s in router.selectors("default")]
    assert default == [[2], [4, 5]]
    assert [list(s(["r"], None)) for s in router.selectors("error")] == [[6]]


def test_router_stream_without_subscribers() -> None:
    topo = Topology("t").add_spout("src", Src).add_bolt("a", Sink, inputs={"src": shuffle()})
    assert Router(topo, "src", None, seed=0).selectors("error") == []


def test_router_raises_for_an_undeclared_stream() -> None:
    router = Router(_topology(), "src", None, seed=0)
    with pytest.raises(EmitError) as info:
        router.selectors("nope")
    message = str(info.value)
    assert "'nope'" in message
    assert "'default'" in message
    assert "'error'" in message
    assert "declare it in the component's outputs" in message


def test_router_for_a_component_without_outputs() -> None:
    router = Router(_topology(), "a", None, seed=0)
    with pytest.raises(EmitError, match="declared: none"):
        router.selectors("default")


@pytest.mark.parametrize(
    "grouping",
    [shuffle(), none(), fields("word"), global_(), all_tasks(), direct(), custom(Recorder([2]))],
    ids=lambda g: g.kind,
)
@pytest.mark.parametrize("parallelism", [1, 3])
def test_router_fixed_is_what_the_selectors_return_for_any_tuple(
    grouping: Grouping, parallelism: int
) -> None:
    """``fixed``: the tasks no selector looks at the tuple to choose, or None."""
    topo = (
        Topology("t")
        .add_spout("src", Src)  # task 1
        .add_bolt("a", Sink, inputs={"src": grouping}, parallelism=parallelism)  # tasks 2..
        .add_bolt("b", Sink, inputs={"src": global_()}, parallelism=2)
    )
    router = Router(topo, "src", None, seed=0)
    fixed = router.fixed("default")
    if fixed is None:  # a selector looks at the tuple, or may choose other tasks each time
        assert grouping.kind in ("direct", "custom") or (
            grouping.kind in ("shuffle", "none", "fields") and parallelism > 1
        )
        return
    for values in (["apple"], ["pear"], [7], [None]):
        for _ in range(4):  # shuffle's rotation included
            chosen = [t for s in router.selectors("default") for t in s(values, None)]
            assert chosen == fixed
    assert router.fixed("error") == []  # nothing subscribes


def test_router_fixed_is_none_for_a_task_subscribed_twice() -> None:
    """Each tuple reaches such a task twice in a row; slices of records would interleave."""
    topo = (
        Topology("t")
        .add_spout("src", Src)
        .add_bolt(
            "a",
            Sink,
            inputs=[Input("src", "default", global_()), Input("src", "default", shuffle())],
        )
    )
    router = Router(topo, "src", None, seed=0)
    assert [t for s in router.selectors("default") for t in s(["w"], None)] == [2, 2]
    assert router.fixed("default") is None
    with pytest.raises(EmitError):
        router.fixed("nope")
