"""Snapshots read as plain values only, in a process that must not run a topology's code."""

from __future__ import annotations

import collections
import datetime
import decimal
import os
import pickle
from pathlib import Path

import pytest

from headwater.common.state._plain import PlainStateError, plain_loads


def test_plain_values_come_back_as_they_went() -> None:
    value = {
        "n": 1,
        "f": 2.5,
        "s": "x",
        "b": b"y",
        "t": (1, None, True),
        "l": [1, [2]],
        "set": {1, 2},
        "fs": frozenset({3}),
        "counter": collections.Counter("aab"),
        "deque": collections.deque([1, 2], maxlen=5),
        "dd": collections.defaultdict(int, {"a": 1}),
        "when": datetime.datetime(2026, 11, 28, tzinfo=datetime.UTC),
        "dec": decimal.Decimal("1.5"),
    }
    assert plain_loads(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)) == value


class _Runs:
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"touch {self.marker}",))


class UserValue:
    pass


def test_a_value_that_would_run_a_command_is_refused_unrun(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    blob = pickle.dumps({"k": _Runs(marker)})
    with pytest.raises(PlainStateError, match=r"holds a posix\.system"):
        plain_loads(blob)
    assert not marker.exists()


@pytest.mark.parametrize(
    "value",
    [UserValue(), collections.defaultdict(UserValue), {"k": [UserValue()]}],
)
def test_other_classes_are_refused_with_what_to_do(value: object) -> None:
    with pytest.raises(PlainStateError, match="--isolation none"):
        plain_loads(pickle.dumps(value))
