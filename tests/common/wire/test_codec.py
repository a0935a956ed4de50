"""headwater.common.wire._codec: the msgpack value codec."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

from headwater.common._exceptions import HeadwaterError, SerializationError
from headwater.common.wire import SUPPORTED_TYPES, DecodeError, decode, encode, is_supported_type

UTC = dt.UTC
PLUS_TWO = dt.timezone(dt.timedelta(hours=2))


@pytest.mark.parametrize(
    "value",
    [
        None,
        True,
        False,
        0,
        -1,
        2**63 - 1,
        -(2**63),
        2**64 - 1,
        1.5,
        -0.25,
        "",
        "héllo wörld",
        b"",
        b"\x00\xff\x10",
        [],
        [1, "a", None, 2.5, b"x"],
        {},
        {"a": 1, "b": [1, 2, {"c": b"d"}]},
        {1: "int key", 2: ["x"]},
        [[[[1]]], {"deep": {"deeper": [{"deepest": None}]}}],
    ],
)
def test_round_trip(value: Any) -> None:
    assert decode(encode(value)) == value


def test_round_trip_preserves_types() -> None:
    out = decode(encode([True, 1, 1.0, "1", b"1"]))
    assert [type(v) for v in out] == [bool, int, float, str, bytes]


def test_utc_datetime_round_trip() -> None:
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    out = decode(encode(when))
    assert isinstance(out, dt.datetime)
    assert out == when
    assert out.tzinfo is not None


def test_non_utc_aware_datetime_keeps_the_instant() -> None:
    when = dt.datetime(2024, 5, 6, 7, 8, 9, 123456, tzinfo=PLUS_TWO)
    out = decode(encode(when))
    assert out == when  # same instant (aware comparison)
    assert out.utcoffset() == dt.timedelta(0)
    assert out.replace(tzinfo=None) == dt.datetime(2024, 5, 6, 5, 8, 9, 123456)


def test_datetime_nested_in_containers() -> None:
    when = dt.datetime(2000, 1, 1, tzinfo=UTC)
    value = {"events": [{"at": when, "tags": ["a", "b"]}], "raw": b"\x01"}
    assert decode(encode(value)) == value


def test_tuples_arrive_as_lists() -> None:
    assert decode(encode((1, (2, 3), [4, (5,)]))) == [1, [2, 3], [4, [5]]]
    out = decode(encode({"k": (1, 2)}))
    assert out == {"k": [1, 2]}
    assert type(out["k"]) is list


def test_decode_accepts_memoryview() -> None:
    data = encode(["a", 1])
    assert decode(memoryview(data)) == ["a", 1]


def test_encoding_is_deterministic() -> None:
    value = {"a": [1, 2.5, "x", b"y"], "b": None}
    assert encode(value) == encode(value)


@pytest.mark.parametrize(
    ("value", "named"),
    [
        (object(), "object"),
        ({1, 2}, "set"),
        (frozenset({1}), "frozenset"),
        (dt.datetime(2024, 1, 1), "naive datetime"),
        (2**64, "int beyond 64 bits"),
        (-(2**63) - 1, "int beyond 64 bits"),
        ([1, "ok", {"inner": [object()]}], "object"),
        ({"a": (1, {2, 3})}, "set"),
        ([dt.datetime(2024, 1, 1, tzinfo=UTC), dt.datetime(2024, 1, 1)], "naive datetime"),
    ],
)
def test_serialization_error_names_the_bad_type(value: Any, named: str) -> None:
    with pytest.raises(SerializationError) as info:
        encode(value)
    message = str(info.value)
    assert f"cannot encode '{named}" in message
    assert "timezone-aware datetime" in message  # says what is allowed


def test_naive_datetime_hint_mentions_tzinfo() -> None:
    with pytest.raises(SerializationError, match="tzinfo"):
        encode({"at": dt.datetime(2024, 1, 1)})


def test_custom_class_is_named_by_qualname() -> None:
    class Reading:
        pass

    with pytest.raises(SerializationError, match="Reading"):
        encode([Reading()])


def test_serialization_error_is_a_headwater_error() -> None:
    with pytest.raises(HeadwaterError):
        encode(object())


def test_encoder_recovers_after_an_error() -> None:
    with pytest.raises(SerializationError):
        encode([1, 2, object()])
    assert decode(encode([1, 2, 3])) == [1, 2, 3]


@pytest.mark.parametrize(
    "tp", [type(None), bool, int, float, str, bytes, list, tuple, dict, dt.datetime]
)
def test_supported_types(tp: type) -> None:
    assert tp in SUPPORTED_TYPES
    assert is_supported_type(tp)


def test_subclasses_of_supported_types_are_supported() -> None:
    class Name(str):
        pass

    assert is_supported_type(Name)
    assert is_supported_type(bool)


@pytest.mark.parametrize("tp", [set, frozenset, object, complex, dt.date, dt.timedelta])
def test_unsupported_types(tp: type) -> None:
    assert not is_supported_type(tp)


@pytest.mark.parametrize("not_a_type", [1, "str", None, len])
def test_is_supported_type_rejects_non_types(not_a_type: object) -> None:
    assert not is_supported_type(not_a_type)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"", "incomplete input"),
        (encode([1, 2, 3])[:-1], "incomplete input"),
        (encode(1) + b"\x01", "extra data"),
        (b"\xc1", "FormatError"),
        (b"\x91" * 5000, "StackError"),  # nested deeper than msgpack's stack
        (b"\xdd\xff\xff\xff\xff", "exceeds max_array_len"),  # declares 2**32 - 1 items
        # found by fuzz/fuzz_codec.py: a map key Python cannot hash was a TypeError
        (b"\x86\x85" + b"3" * 27, "unhashable"),
        (b"\x81\x90\x01", "unhashable"),
        # a timestamp whose nanoseconds are out of range was a ValueError of msgpack's
        (b"\xc7\x0c\xff" + b"\xff" * 12, "nanoseconds"),
    ],
)
def test_bytes_the_codec_did_not_write_are_a_decode_error(data: bytes, says: str) -> None:
    with pytest.raises(DecodeError, match=says) as raised:
        decode(data)
    assert isinstance(raised.value, SerializationError)
    assert isinstance(raised.value, ValueError)
