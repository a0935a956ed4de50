"""What a decision needs of a task (issue 35): busy time, tuples received, hot keys."""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from typing import Any

import pytest

from headwater import Bolt, Context, Spout, Topology, Tuple, fields, shuffle
from headwater.common.runtime._executor import run_bolt, run_spout
from headwater.common.runtime._hot_keys import HotKeys, TopK, keyed_inputs
from headwater.common.runtime._instance import Instance
from headwater.common.runtime._instance_metrics import report_metrics
from headwater.common.runtime._stmgr_metrics import TaskMetrics
from headwater.common.wire import Kind, columns, decode, encode, encode_frame, parse_frame
from tests._wait import wait_for

from ._opened import Opened

SLEEP_S = 0.02


class Src(Spout):
    """Emits ``n`` tuples, each after ``SLEEP_S`` in next_tuple, then nothing."""

    outputs = ("k", "v")
    n = 5

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.left = self.n

    def next_tuple(self) -> None:
        if self.left:
            time.sleep(SLEEP_S)
            self.left -= 1
            self.ctx.emit(["a", self.left])


class Slow(Bolt):
    """Sleeps ``SLEEP_S`` per tuple."""

    def process(self, tup: Tuple) -> None:
        time.sleep(SLEEP_S)


class Quick(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


def _topology(bolt: type[Bolt] = Slow) -> Topology:
    return (
        Topology("t", config={"topology.reliability.mode": "ATMOST_ONCE"})
        .add_spout("src", Src)  # task 1
        .add_bolt("work", bolt, inputs={"src": fields("k")})  # task 2
        .add_bolt("out", Quick, inputs={"work": shuffle()})  # task 3
    )


def _instance(task: int, opened: Opened, bolt: type[Bolt] = Slow) -> Instance:
    return opened(_topology(bolt), task)


def _frame(values: list[list[Any]]) -> bytes:
    return encode_frame(Kind.DATA, 2, 1, len(values), b"default", encode(values))


def _columns_frame(values: list[list[Any]]) -> bytes:
    cols = encode(columns(values))
    return encode_frame(Kind.DATA_COLUMNS, 2, 1, len(values), b"default", cols)


def _reported(inst: Instance) -> dict[str, Any]:
    report_metrics(inst)
    m: dict[str, Any] = decode(parse_frame(inst.gateway.metrics_out[-1]).payload)
    return m


def _run(target: Any, *args: Any) -> threading.Thread:
    t = threading.Thread(target=target, args=args, daemon=True)
    t.start()
    return t


def test_a_bolt_is_busy_while_it_processes_and_not_while_it_waits(opened: Opened) -> None:
    inst = _instance(2, opened)
    assert isinstance(inst.component_obj, Bolt)
    loop = _run(run_bolt, inst, inst.component_obj)
    try:
        time.sleep(0.5)  # idle: no input
        idle = inst.counts.busy_ns
        inst.gateway.inbox.put(_frame([["a", i] for i in range(5)]))
        wait_for(lambda: inst.counts.executed == 5, 10, "the frame processed")
        wait_for(
            lambda: inst.counts.busy_ns - idle >= 5 * SLEEP_S * 1e9, 10, "the frame's busy time"
        )
        busy = inst.counts.busy_ns
        time.sleep(1.0)  # idle again
        after = inst.counts.busy_ns
    finally:
        inst.stopping = True
        loop.join(5)
    assert idle < 0.1e9  # half a second without input: next to nothing
    assert busy - idle >= 5 * SLEEP_S * 1e9  # at least the bolt's sleeps
    assert busy - idle < 5 * SLEEP_S * 1e9 + 0.25e9
    assert after - busy < 0.2e9  # a second of waiting for input adds (next to) nothing
    m = _reported(inst)
    assert m["busy_ns"] == inst.counts.busy_ns and m["received"] == 5
    assert 0 < m["uptime_ns"] <= time.monotonic_ns() - inst.counts.started_ns  # read with them


def test_a_spout_is_busy_in_next_tuple_and_not_while_it_sleeps(opened: Opened) -> None:
    inst = _instance(1, opened)
    assert isinstance(inst.component_obj, Spout)
    inst.active = True
    loop = _run(run_spout, inst, inst.component_obj)
    try:
        wait_for(lambda: inst.emitter.emitted == Src.n, 10, "the spout's tuples emitted")
        wait_for(lambda: inst.counts.busy_ns >= Src.n * SLEEP_S * 1e9, 10, "the spout's busy time")
        busy = inst.counts.busy_ns
        time.sleep(1.0)  # next_tuple emits nothing: the loop sleeps between calls
        after = inst.counts.busy_ns
    finally:
        inst.stopping = True
        loop.join(5)
    assert busy >= Src.n * SLEEP_S * 1e9
    assert busy < Src.n * SLEEP_S * 1e9 + 0.3e9
    assert after - busy < 0.25e9
    assert _reported(inst)["received"] == 0


def test_time_blocked_on_a_full_outbox_is_not_busy_and_busy_never_goes_back(
    opened: Opened,
) -> None:
    inst = _instance(2, opened)
    inst.counts.busy_ns = 5_000_000_000
    inst.gateway.outbox.blocked_s = 2.0
    assert _reported(inst)["busy_ns"] == 3_000_000_000
    inst.gateway.outbox.blocked_s = 4.0  # a block outside the timed loops (the last flush)
    assert _reported(inst)["busy_ns"] == 3_000_000_000
    inst.counts.busy_ns = 8_000_000_000
    assert _reported(inst)["busy_ns"] == 4_000_000_000


@pytest.mark.parametrize("layout", [_frame, _columns_frame], ids=["rows", "columns"])
def test_received_counts_tuples_and_hot_keys_come_from_one_in_sixteen(
    opened: Opened, layout: Any
) -> None:
    inst = _instance(2, opened, Quick)
    assert inst.counts.hot.keyed == {("src", "default"): [0]}
    # 160 tuples: those at 0, 16, ..., 144 are sampled; the others' keys never show
    values = [["x" if i < 96 else "y", i] if i % 16 == 0 else ["noise", i] for i in range(160)]
    for at in range(0, 160, 7):  # in frames of 7: the stride goes on across frames
        inst.gate.handle(layout(values[at : at + 7]))
    m = _reported(inst)
    assert m["received"] == 160 and m["executed"] == 160
    assert m["hot_keys"] == {"x": 0.6, "y": 0.4}
    assert _reported(inst)["hot_keys"] == {}  # each interval's own


def test_rooted_frames_and_several_key_fields_are_sampled() -> None:
    hot = HotKeys({("src", "s"): [1, 0]})
    entries = [[[i % 2, "k"], [1, i, 0]] for i in range(32)]
    hot.sample("src", "s", entries, rooted=True)  # 0 and 16: both ("k", 0)
    hot.sample("other", "s", entries, rooted=True)  # not a fields-grouped input: nothing
    assert hot.report() == {"('k', 0)": 1.0}
    cols: list[list[Any]] = [
        [i % 2 for i in range(40)],
        ["k" if i < 32 else "j" for i in range(40)],
    ]
    hot.sample_columns("src", "s", cols, 40)  # 0, 16 and 32 (the stride from row 0 on)
    hot.sample_columns("other", "s", cols, 40)
    assert hot.report() == {"('k', 0)": 2 / 3, "('j', 0)": 1 / 3}


def test_an_unhashable_key_is_sampled_by_its_rendering_and_the_rest_go_on() -> None:
    hot = HotKeys({("src", "s"): [0]})
    keys: list[Any] = [["a"], "b", ["a"], "b", {"m": 1}, "b"]  # each sampled (STRIDE apart)
    cols = [[k for k in keys for _ in range(16)], list(range(96))]
    hot.sample_columns("src", "s", cols, 96)
    hot.sample("src", "s", [[k, 0] for k in keys for _ in range(16)], rooted=False)
    assert hot.report() == {"b": 0.5, "['a']": 1 / 3, "{'m': 1}": 1 / 6}
    assert hot.top.total == 0


def test_a_component_without_a_fields_grouped_input_samples_nothing(opened: Opened) -> None:
    inst = _instance(3, opened, Quick)
    assert keyed_inputs(_topology(), "out") == {} and not inst.counts.hot.keyed
    assert _reported(inst)["hot_keys"] == {}


def test_top_k_is_exact_for_few_keys_and_space_saving_beyond() -> None:
    top = TopK(k=16)
    for key in (
        ["a"] * 50 + ["b"] * 30 + ["c"] * 10 + ["d", "e", "f", "g", "h", "i"] * 1 + ["j"] * 4
    ):
        top.add(key)
    assert top.shares() == {"a": 0.5, "b": 0.3, "c": 0.1, "j": 0.04, "d": 0.01}
    assert top.total == 0 and top.counts == {}  # reset
    small = TopK(k=2)
    for key in "aab":
        small.add(key)
    small.add("c")  # takes b's counter (the smallest) and its count: 2
    assert small.counts == {"a": 2, "c": 2}
    small.add("x" * 100)  # a's (the first of the smallest): 3; rendered, cut to 64 chars
    assert small.shares() == {"x" * 64: 0.6, "c": 0.4}


@pytest.mark.parametrize("seed", range(20))
def test_top_k_keeps_space_saving_s_guarantees(seed: int) -> None:
    """Counts sum to what was added, never under a key's true count, and every key above
    total / k is held; the stream summary agrees with the counts after every frame."""
    rng = random.Random(seed)
    top, true = TopK(k=rng.choice([1, 2, 4, 16])), Counter[int]()
    for _ in range(rng.randint(1, 40)):
        frame = [int(rng.paretovariate(1.2)) % 50 for _ in range(rng.randint(1, 70))]
        top.add_all(frame)
        true.update(frame)
        assert sum(top.counts.values()) == top.total == sum(true.values())
        assert all(top.counts[key] >= true[key] for key in top.counts)
        assert {key for key, n in true.items() if n > top.total / top.k} <= top.counts.keys()
        assert top.low == min(top.counts.values())
        assert {key: n for n, keys in top.at.items() for key in keys} == top.counts


def test_the_stmgr_folds_busy_time_and_received_across_a_restart() -> None:
    tm = TaskMetrics()
    tm.report(
        {
            "task": 4,
            "busy_ns": 700,
            "received": 10,
            "uptime_ns": 9000,
            "hot_keys": {"a": 0.75, "b": 0.25},
        }
    )
    first = {name: v for _, name, v in tm.task_metrics(4, True)}
    assert (first["busy_ns"], first["received"], first["uptime_ns"]) == (700.0, 10.0, 9000.0)
    assert (first["hot_key:a"], first["hot_key:b"]) == (0.75, 0.25)
    tm.fold(4)  # the instance went away; its successor starts from zero
    tm.report({"task": 4, "busy_ns": 50, "received": 2, "uptime_ns": 100, "hot_keys": {"c": 1.0}})
    after = {name: v for _, name, v in tm.task_metrics(4, True)}
    assert (after["busy_ns"], after["received"]) == (750.0, 12.0)
    assert after["uptime_ns"] == 9100.0  # the task's clock goes on: rates over it never jump
    assert after["hot_key:c"] == 1.0 and "hot_key:a" not in after  # the last interval's alone
