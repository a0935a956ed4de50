"""headwater.common.dsl._windows: event-time windows with exact expected results."""

from __future__ import annotations

import operator
from typing import Any

import pytest

from headwater.common.dsl._windows import Session, Sliding, Tumbling, WindowedReduce


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
