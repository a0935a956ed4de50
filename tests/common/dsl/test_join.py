"""headwater.common.dsl._window_ops.JoinOp: window joins per key, with exact expected pairs."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.dsl._window_ops import JoinOp
from headwater.common.dsl._windows import Tumbling
from headwater.testing import TestContext

LEFT = [("a", 1, "a1"), ("b", 2, "b1"), ("a", 12, "a2")]
RIGHT = [("a", 3, "A1"), ("a", 4, "A2"), ("c", 5, "C1"), ("c", 14, "C2")]


def join(how: str) -> tuple[list[Any], list[Any]]:
    op = JoinOp(
        "j",
        Tumbling(10),
        (lambda v: v[0], lambda v: v[0]),
        lambda left, right: (left and left[1], right and right[1]),
        how,
        0,
        0,
    )
    op.open(TestContext())
    out: list[Any] = []
    late: list[Any] = []
    records = [(0, k, (ts, v)) for k, ts, v in LEFT] + [(1, k, (ts, v)) for k, ts, v in RIGHT]
    records.sort(key=lambda r: r[2][0])  # in event-time order
    for side, key, value in [*records, (0, "z", (100, "flush"))]:
        op.process_side(
            side,
            key,
            value,
            lambda k, v: out.append([k, v]),
            lambda tag, k, v: late.append([tag, k, v]),
        )
    return out, late


def test_inner_join_pairs_within_the_window() -> None:
    out, late = join("inner")
    assert sorted(out) == [["a", ("a1", "A1")], ["a", ("a1", "A2")]]
    assert late == []


def test_left_join_keeps_unmatched_left_records() -> None:
    out, _ = join("left")
    assert sorted(out, key=repr) == sorted(
        [
            ["a", ("a1", "A1")],
            ["a", ("a1", "A2")],
            ["b", ("b1", None)],
            ["a", ("a2", None)],
        ],
        key=repr,
    )


def test_outer_join_keeps_both_sides() -> None:
    out, _ = join("outer")
    assert sorted(out, key=repr) == sorted(
        [
            ["a", ("a1", "A1")],
            ["a", ("a1", "A2")],
            ["b", ("b1", None)],
            ["a", ("a2", None)],
            ["c", (None, "C1")],
            ["c", (None, "C2")],
        ],
        key=repr,
    )


def test_a_join_takes_records_by_side_only() -> None:
    op = JoinOp("j", Tumbling(10), (int, int), lambda a, b: (a, b), "inner", 0, 0)
    with pytest.raises(TypeError, match="two inputs"):
        op.process("k", 1, lambda k, v: None, lambda t, k, v: None)
