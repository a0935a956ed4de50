"""Behaviour tests run in every execution mode (``run_in``: kit, cluster, agent).

The DSL's windows and joins (``tests/common/dsl/test_windows.py``, ``test_join.py``: the
same records, the same results, plus the windows the end of a bounded source closes) and
heronpy's groupings (``tests/integration/test_groupings.py``'s, through the heronpy API),
with exact outputs, the same in each mode.
"""

from __future__ import annotations

from typing import Any

from headwater.common.runtime import key_hash

from .._workers import one_worker
from .conftest import RunIn, case

# the agent's daemons and each cluster are the module's: made once, on one worker
pytestmark = one_worker(__name__)


def windows(**settings: Any) -> dict[str, Any]:
    return {"ooo": 0, "lateness": 0, **settings}


TUMBLING = case(
    "windows.py",
    [["a", 0, 1], ["b", 3, 10], ["a", 9, 2], ["a", 10, 4], ["b", 15, 20], ["a", 25, 8]],
    rows=5,
    **windows(window=["tumbling", 10]),
)
# the watermark trails the newest timestamp by 5: the 8 after the 12 still counts
OUT_OF_ORDER = case(
    "windows.py",
    [["a", 1, 1], ["a", 12, 2], ["a", 8, 4], ["a", 14, 8], ["a", 16, 16], ["a", 31, 32]],
    rows=3,
    **windows(window=["tumbling", 10], ooo=5),
)
LATENESS = case(
    "windows.py",
    [
        ["a", 2, 1],
        ["a", 11, 2],  # watermark 11: [0, 10) fires with 1
        ["a", 7, 4],  # late but within lateness: [0, 10) fires again with 5
        ["a", 16, 8],  # watermark 16 >= 10 + 5: [0, 10) is purged
        ["a", 3, 100],  # too late: side output, nothing changes
        ["a", 21, 0],  # watermark 21: [10, 20) fires
    ],
    rows=5,
    **windows(window=["tumbling", 10], lateness=5),
)
SLIDING = case(
    "windows.py",
    [["k", 1, 1], ["k", 6, 2], ["k", 12, 4], ["k", 40, 0]],
    rows=6,
    **windows(window=["sliding", 10, 5]),
)
SESSIONS = case(
    "windows.py",
    [
        ["u", 0, 1],
        ["u", 3, 2],  # one session [0, 8)
        ["u", 12, 4],  # another [12, 17)
        ["u", 8, 8],  # [8, 13) bridges both: [0, 17) with 15
        ["v", 1, 100],
        ["u", 40, 0],
        ["v", 60, 0],  # watermark 50: both close
    ],
    rows=4,
    **windows(window=["session", 5], ooo=10),
)


def fired_and_late(out: dict[str, list[Any]]) -> tuple[list[Any], list[Any]]:
    """The windows the sink received (sorted) and the late records (in order)."""
    return sorted(r[1] for r in out.get("sink", [])), [r[1] for r in out.get("sink_late", [])]


def test_tumbling_window(run_in: RunIn) -> None:
    fired, late = fired_and_late(run_in(TUMBLING))
    assert fired == sorted(
        [
            ["a", 0, 10, 3],
            ["b", 0, 10, 10],
            ["a", 10, 20, 4],
            ["b", 10, 20, 20],
            ["a", 20, 30, 8],  # closed by the end of the collection
        ]
    )
    assert late == []


def test_tumbling_out_of_order_within_the_bound_is_on_time(run_in: RunIn) -> None:
    fired, late = fired_and_late(run_in(OUT_OF_ORDER))
    assert fired == [["a", 0, 10, 5], ["a", 10, 20, 26], ["a", 30, 40, 32]]
    assert late == []


def test_lateness_refires_then_the_side_output_takes_the_rest(run_in: RunIn) -> None:
    fired, late = fired_and_late(run_in(LATENESS))
    assert fired == [["a", 0, 10, 1], ["a", 0, 10, 5], ["a", 10, 20, 10], ["a", 20, 30, 0]]
    assert late == [["a", 3, 100]]


def test_sliding_windows_overlap(run_in: RunIn) -> None:
    fired, _ = fired_and_late(run_in(SLIDING))
    assert fired == [
        ["k", -5, 5, 1],
        ["k", 0, 10, 3],
        ["k", 5, 15, 6],
        ["k", 10, 20, 4],
        ["k", 35, 45, 0],  # these two: closed by the end of the collection
        ["k", 40, 50, 0],
    ]


def test_sessions_merge_when_a_record_bridges_them(run_in: RunIn) -> None:
    fired, late = fired_and_late(run_in(SESSIONS))
    assert fired == [["u", 0, 17, 15], ["u", 40, 45, 0], ["v", 1, 6, 100], ["v", 60, 65, 0]]
    assert late == []


LEFT = [["a", 1, "a1"], ["b", 2, "b1"], ["a", 12, "a2"]]
RIGHT = [["a", 3, "A1"], ["a", 4, "A2"], ["c", 5, "C1"], ["c", 14, "C2"]]


def join(how: str, rows: int) -> Any:
    """Two sources need not interleave in event time: out-of-orderness 100 keeps the one
    that comes second on time (the unit tests feed one stream in time order)."""
    inputs = {"left": LEFT, "right": RIGHT}
    return case("join.py", inputs, rows=rows, how=how, window=10, ooo=100)


INNER, LEFT_JOIN, OUTER = join("inner", 2), join("left", 4), join("outer", 6)


def pairs(out: dict[str, list[Any]]) -> list[Any]:
    return sorted(out["sink"], key=repr)


def test_inner_join_pairs_within_the_window(run_in: RunIn) -> None:
    assert pairs(run_in(INNER)) == [["a", ["a1", "A1"]], ["a", ["a1", "A2"]]]


def test_left_join_keeps_unmatched_left_records(run_in: RunIn) -> None:
    assert pairs(run_in(LEFT_JOIN)) == sorted(
        [["a", ["a1", "A1"]], ["a", ["a1", "A2"]], ["b", ["b1", None]], ["a", ["a2", None]]],
        key=repr,
    )


def test_outer_join_keeps_both_sides(run_in: RunIn) -> None:
    assert pairs(run_in(OUTER)) == sorted(
        [
            ["a", ["a1", "A1"]],
            ["a", ["a1", "A2"]],
            ["b", ["b1", None]],
            ["a", ["a2", None]],
            ["c", [None, "C1"]],
            ["c", [None, "C2"]],
        ],
        key=repr,
    )


SEQS = list(range(60))
GROUPINGS = case("heron_groupings.py", SEQS, rows=len(SEQS) * 7)  # all: 3 copies of each


def test_heronpy_groupings_route_exactly(run_in: RunIn) -> None:
    got: dict[str, dict[int, list[int]]] = {}
    for component, index, seq in run_in(GROUPINGS)["sink"]:
        got.setdefault(component, {}).setdefault(index, []).append(seq)
    by_task = {c: {i: sorted(s) for i, s in tasks.items()} for c, tasks in got.items()}
    # round-robin from one spout task: an even split, each seq once
    assert sorted(s for t in by_task["shuffle"].values() for s in t) == SEQS
    assert sorted(len(t) for t in by_task["shuffle"].values()) == [20, 20, 20]
    fields = {i: [s for s in SEQS if key_hash(s % 7) % 3 == i] for i in range(3)}
    assert by_task["fields"] == {i: s for i, s in fields.items() if s}
    assert by_task["all"] == {0: SEQS, 1: SEQS, 2: SEQS}
    assert by_task["lowest"] == {0: SEQS}
    assert by_task["custom"] == {0: SEQS[0::2], 1: SEQS[1::2]}
