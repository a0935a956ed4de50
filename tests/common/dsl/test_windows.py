"""headwater.common.dsl._windows: event-time windows with exact expected results."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from headwater import InvalidTopologyError
from headwater.common.api import Tuple
from headwater.common.api._state import KeyedState
from headwater.common.dsl._window_ops import KeyClockWindowOp
from headwater.common.dsl._windows import (
    KeyClockWindows,
    Session,
    Sliding,
    Tumbling,
    WindowedReduce,
)
from headwater.common.wire import decode, encode
from headwater.dsl import KeyClockWindowBolt, Pipeline
from headwater.testing import TestContext, run_main


def run(w: WindowedReduce, records: list[tuple[str, int, Any]]) -> tuple[list[Any], list[Any]]:
    out: list[Any] = []
    late: list[Any] = []
    for key, ts, value in records:
        w.add(key, ts, value, out.append, late.append)
    return out, late


def sums(assigner: Any, ooo: int = 0, lateness: int = 0) -> WindowedReduce:
    return WindowedReduce(assigner, operator.add, out_of_orderness=ooo, lateness=lateness)


def test_tumbling_in_order() -> None:
    out, late = run(
        sums(Tumbling(10)),
        [
            ("a", 0, 1),
            ("b", 3, 10),
            ("a", 9, 2),
            ("a", 10, 4),
            ("b", 15, 20),
            ("a", 25, 8),
        ],
    )
    assert out == [["a", 0, 10, 3], ["b", 0, 10, 10], ["a", 10, 20, 4], ["b", 10, 20, 20]]
    assert late == []


def test_tumbling_out_of_order_within_the_bound_is_on_time() -> None:
    # the watermark trails the newest timestamp by 5: the 8 after the 12 still counts
    out, late = run(
        sums(Tumbling(10), ooo=5),
        [
            ("a", 1, 1),
            ("a", 12, 2),
            ("a", 8, 4),
            ("a", 14, 8),
            ("a", 16, 16),
            ("a", 31, 32),
        ],
    )
    assert out == [["a", 0, 10, 5], ["a", 10, 20, 26]]
    assert late == []


def test_lateness_refires_then_the_side_output_takes_the_rest() -> None:
    w = sums(Tumbling(10), ooo=0, lateness=5)
    out, late = run(
        w,
        [
            ("a", 2, 1),
            ("a", 11, 2),  # watermark 11: [0, 10) fires with 1
            ("a", 7, 4),  # late but within lateness: [0, 10) fires again with 5
            ("a", 16, 8),  # watermark 16 >= 10 + 5: [0, 10) is purged
            ("a", 3, 100),  # too late: side output, nothing changes
            ("a", 21, 0),  # watermark 21: [10, 20) fires
        ],
    )
    assert out == [["a", 0, 10, 1], ["a", 0, 10, 5], ["a", 10, 20, 10]]
    assert late == [["a", 3, 100]]
    assert w.watermark == 21
    assert sorted(w.windows["a"]) == [10, 20]  # [10, 20) stays until the watermark passes 25


def test_sliding_windows_overlap() -> None:
    out, _ = run(sums(Sliding(10, 5)), [("k", 1, 1), ("k", 6, 2), ("k", 12, 4), ("k", 40, 0)])
    assert out == [
        ["k", -5, 5, 1],
        ["k", 0, 10, 3],
        ["k", 5, 15, 6],
        ["k", 10, 20, 4],
    ]


def test_sessions_merge_when_a_record_bridges_them() -> None:
    out, late = run(
        sums(Session(5), ooo=10),
        [
            ("u", 0, 1),
            ("u", 3, 2),  # one session [0, 8)
            ("u", 12, 4),  # another [12, 17)
            ("u", 8, 8),  # [8, 13) bridges both: [0, 17) with 15
            ("v", 1, 100),
            ("u", 40, 0),
            ("v", 60, 0),  # watermark 50: both close
        ],
    )
    assert out == [["v", 1, 6, 100], ["u", 0, 17, 15], ["u", 40, 45, 0]]
    assert late == []


def test_state_round_trips_through_plain_mappings() -> None:
    w = sums(Tumbling(10), ooo=0, lateness=0)
    run(w, [("a", 1, 1), ("b", 2, 2)])
    # a restore builds the step again on the snapshot's values
    again = WindowedReduce(
        Tumbling(10),
        operator.add,
        out_of_orderness=0,
        lateness=0,
        windows=dict(w.windows),
        meta=dict(w.meta),
    )
    out, _ = run(again, [("a", 5, 4), ("a", 10, 0)])
    assert out == [["a", 0, 10, 5], ["b", 0, 10, 2]]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Tumbling(0), "positive whole size"),
        (lambda: Sliding(10, 3), "multiple of slide"),
        (lambda: Session(-1), "positive whole gap"),
        (lambda: sums(Tumbling(5), ooo=-1), "must not be negative"),
    ],
)
def test_bad_windows_are_refused(make: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_aggregate_folds_into_an_accumulator_and_sessions_merge_them() -> None:
    def add(acc: dict[str, int], v: int) -> dict[str, int]:
        return {"n": acc["n"] + 1, "sum": acc["sum"] + v}

    def merge(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
        return {"n": a["n"] + b["n"], "sum": a["sum"] + b["sum"]}

    def first(v: int) -> dict[str, int]:
        return add({"n": 0, "sum": 0}, v)

    w = WindowedReduce(Session(5), add, out_of_orderness=10, lateness=0, first=first, merge=merge)
    out, _ = run(w, [("u", 0, 1), ("u", 8, 4), ("u", 4, 2), ("u", 40, 0)])
    assert out == [["u", 0, 13, {"n": 3, "sum": 7}]]  # [4, 9) joined [0, 5) and [8, 13)


# -- clock="key": each key's windows close by the key's own clock -------------------------

# key b lags a by more than a window: a's clock is at 35 before b's first record at 2
LAGGING = [
    ("a", 1, 1),
    ("a", 12, 2),
    ("a", 25, 4),
    ("a", 35, 8),
    ("b", 2, 100),
    ("b", 7, 200),
    ("a", 36, 16),
    ("b", 14, 300),
    ("b", 27, 400),
]


def per_key_sums(windows: Any = None) -> KeyClockWindows:
    return KeyClockWindows(Tumbling(10), operator.add, windows=windows)


def test_per_key_windows_of_a_lagging_key_are_exact() -> None:
    out, late = run_keys(per_key_sums(), LAGGING)
    assert out == [
        ["a", 0, 10, 1],
        ["a", 10, 20, 2],
        ["a", 20, 30, 4],
        ["b", 0, 10, 300],  # closed by b's 14, though a's clock passed 10 long before
        ["b", 10, 20, 300],
    ]
    assert late == []
    # by the task's watermark (clock="task", a's 36 by then) every record of b is late
    _, task_late = run(sums(Tumbling(10)), LAGGING)
    assert [r[:2] for r in task_late] == [["b", 2], ["b", 7], ["b", 14], ["b", 27]]


def run_keys(
    w: KeyClockWindows, records: list[tuple[str, int, Any]]
) -> tuple[list[Any], list[Any]]:
    out: list[Any] = []
    for key, ts, value in records:
        w.add(key, ts, value, out.append)
    return out, []


def test_a_key_whose_clock_goes_back_opens_that_window_afresh() -> None:
    # as the IoT example's hand-written windows did: every record in exactly one closed window
    out, _ = run_keys(
        per_key_sums(), [("a", 1, 1), ("a", 12, 2), ("a", 5, 4), ("a", 8, 8), ("a", 15, 16)]
    )
    assert out == [["a", 0, 10, 1], ["a", 10, 20, 2], ["a", 0, 10, 12]]


def test_a_failing_fold_changes_nothing() -> None:
    # a record that raises (retried, then dead-lettered) neither closes nor changes a window
    w = KeyClockWindows(Tumbling(10), operator.add, first=lambda v: 0 + v)
    out: list[Any] = []
    w.add("a", 1, 1, out.append)
    with pytest.raises(TypeError):
        w.add("a", 5, "x", out.append)  # its own window's fold raises
    with pytest.raises(TypeError):
        w.add("a", 12, "x", out.append)  # a new window's first accumulator raises
    assert out == []
    assert w.windows == {"a": [0, 1]}


def _op_run(
    ctx: TestContext, records: list[tuple[str, int, Any]], out: list[Any]
) -> KeyClockWindowOp:
    op = KeyClockWindowOp("w", Tumbling(10), lambda r: r[0], lambda a, r: a + r[1], lambda r: r[1])
    op.open(ctx)
    for key, ts, value in records:
        op.process(key, (ts, value), lambda k, v: out.append(v), lambda *_: None)
    return op


def test_per_key_windows_restore_mid_window_from_a_checkpoint() -> None:
    whole: list[Any] = []
    _op_run(TestContext(), LAGGING, whole)
    first: list[Any] = []
    ctx = TestContext()
    _op_run(ctx, LAGGING[:5], first)  # a's [30, 40) and b's [0, 10) are open
    snapshot = encode(dict(ctx.keyed["w"].items()))  # a checkpoint's keyed state, on the wire
    restored = TestContext()
    restored.keyed["w"] = KeyedState(decode(snapshot))
    rest: list[Any] = []
    _op_run(restored, LAGGING[5:], rest)
    assert first + rest == whole
    assert ctx.dead_letters == restored.dead_letters == []
    assert [(w["key"], w["start"], w["value"]) for w in whole] == [
        ("a", 0, 1),
        ("a", 10, 2),
        ("a", 20, 4),
        ("b", 0, 300),
        ("b", 10, 300),
    ]


def _lagging_pipeline(out: list[Any], clock: str) -> Pipeline:
    p = Pipeline("lag")
    (
        p.from_collection("readings", [{"k": k, "ts": ts, "v": v} for k, ts, v in LAGGING])
        .key_by("by_key", lambda r: r["k"])
        .flat_map_by_key("seen", lambda n, r: ((n or 0) + 1, [r]))
        .window("w", Tumbling(10), timestamp=lambda r: r["ts"], clock=clock)
        .aggregate("total", lambda: 0, lambda acc, r: acc + r["v"])
        .sink("out", out.append)
    )
    return p


def test_a_per_key_window_step_runs_fused_behind_keyed_steps_with_exact_results() -> None:
    out: list[Any] = []
    p = _lagging_pipeline(out, "key")
    steps = [c.config.get("headwater.dsl.steps") for c in p.build().components]
    assert ("seen", "w", "total", "out") in steps  # no exchange, no watermark stream
    run_main(p)
    assert [(w["key"], w["start"], w["end"], w["value"]) for w in out] == [
        ("a", 0, 10, 1),
        ("a", 10, 20, 2),
        ("a", 20, 30, 4),
        ("b", 0, 10, 300),
        ("b", 10, 20, 300),
    ]


def test_the_component_form_gives_the_dsl_steps_rows() -> None:
    bolt = KeyClockWindowBolt(
        "windows",
        Tumbling(10),
        key=lambda r: r[0],
        timestamp=lambda r: r[1],
        zero=lambda: 0,
        add=lambda acc, r: acc + r[2],
    )
    ctx = TestContext(component="windows")
    bolt.open(ctx)
    for record in LAGGING:
        bolt.process(Tuple(None, "src", "default", 1, list(record), 0.0))
    assert ctx.values() == [
        ["a", 0, 10, 1],
        ["a", 10, 20, 2],
        ["a", 20, 30, 4],
        ["b", 0, 10, 300],
        ["b", 10, 20, 300],
    ]
    assert dict(ctx.keyed["windows"].items()) == {"a": [30, 24], "b": [20, 400]}


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"clock": "wall"}, "use 'task' or 'key'"),
        ({"clock": "key", "timestamp": None}, "needs event time"),
        ({"clock": "key", "assigner": Sliding(10, 5)}, "takes Tumbling windows"),
        ({"clock": "key", "lateness": 5}, "no watermark"),
    ],
)
def test_bad_per_key_windows_are_refused(kw: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = {"timestamp": lambda r: r, "assigner": Tumbling(10), **kw}
    stream = Pipeline("p").from_collection("src", [1]).key_by("k", lambda r: r)
    with pytest.raises(InvalidTopologyError, match=message):
        stream.window("w", args.pop("assigner"), **args)
    with pytest.raises(ValueError, match="tumbling windows only"):
        KeyClockWindowBolt("w", Sliding(10, 5), key=len, timestamp=len, zero=list, add=operator.add)  # type: ignore[arg-type]
