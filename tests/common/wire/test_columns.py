"""headwater.common.wire._columns: untracked tuples of one shape travel as a column a field."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.wire import (
    DecodeError,
    Kind,
    columns,
    data_rows,
    decode_columns,
    encode,
    encode_frame,
    parse_frame,
    rows,
)


def test_tuples_of_one_shape_become_columns_and_back() -> None:
    entries = [["a", 1], ["b", 2], ["a", 3]]
    cols = columns(entries)
    assert cols == [["a", "b", "a"], [1, 2, 3]]
    decoded = decode_columns(encode(cols), 3)
    assert decoded == [["a", "b", "a"], [1, 2, 3]]
    assert rows(decoded) == entries
    assert all(type(r) is list for r in rows(decoded))  # value lists, as rows carry them


@pytest.mark.parametrize(
    "entries",
    [
        [["a", 1], ["b"]],
        [[], []],
        [["a"], ["b", 2], ["c"]],
        [["a", 1], ["b", 2, 3], ["c"]],
        [],
        ["ab", "cd"],  # records given to a bound emit as they are: sent as they are
        [["a", "b"], "cd"],
        [b"ab", b"cd"],
    ],
    ids=[
        "ragged",
        "no fields",
        "one longer",
        "longer and shorter",
        "none",
        "strings",
        "a string among lists",
        "bytes",
    ],
)
def test_ragged_tuples_and_tuples_without_fields_stay_rows(entries: list[Any]) -> None:
    assert columns(entries) is None


@pytest.mark.parametrize(
    "value",
    [
        {"a": 1},  # not a list
        [],  # no column
        [["a", "b"], ["x"]],  # a column shorter than the frame says
        [["a", "b", "c"]],  # longer
        [["a", "b"], "xy"],  # a column that is not a list
    ],
)
def test_a_payload_of_another_shape_is_a_decode_error(value: Any) -> None:
    with pytest.raises(DecodeError):
        decode_columns(encode(value), 2)


def test_data_rows_reads_every_layout() -> None:
    cols = encode(columns([["a", 1], ["b", 2]]))
    as_cols = parse_frame(encode_frame(Kind.DATA_COLUMNS, 2, 1, 2, b"s", cols))
    as_rows = parse_frame(encode_frame(Kind.DATA, 2, 1, 2, b"s", encode([["a", 1], ["b", 2]])))
    rooted = parse_frame(encode_frame(Kind.DATA_ROOTED, 2, 1, 1, b"s", encode([[["a"], [1]]])))
    assert data_rows(as_cols) == data_rows(as_rows) == [["a", 1], ["b", 2]]
    assert data_rows(rooted) == [[["a"], [1]]]
    with pytest.raises(DecodeError):
        data_rows(parse_frame(encode_frame(Kind.DATA, 2, 1, 1, b"s", encode(7))))
