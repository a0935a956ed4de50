"""headwater.common.wire._frame: binary frames and the length-prefixed reader."""

from __future__ import annotations

import pytest

from headwater.common.wire import (
    FRAME_HEADER,
    FrameError,
    FrameReader,
    Kind,
    decode,
    encode,
    encode_frame,
    frame_dest,
    frame_kind,
    parse_frame,
)
from headwater.common.wire._frame import STMGR, length_prefix


def _framed(frame: bytes) -> bytes:
    return length_prefix(frame) + frame


def test_round_trip_of_every_header_field() -> None:
    payload = encode([["a", 1], ["b", 2]])
    frame = encode_frame(Kind.DATA, 7, 3, 2, b"words", payload)
    parsed = parse_frame(frame)
    assert parsed.kind == Kind.DATA
    assert parsed.dest == 7
    assert parsed.src == 3
    assert parsed.entries == 2
    assert parsed.stream == "words"
    assert isinstance(parsed.payload, memoryview)
    assert bytes(parsed.payload) == payload
    assert decode(parsed.payload) == [["a", 1], ["b", 2]]
    assert frame_kind(frame) == Kind.DATA
    assert frame_dest(frame) == 7


def test_layout_is_header_then_stream_then_payload() -> None:
    frame = encode_frame(Kind.ACK, 1, 2, 3, b"s", b"PAY")
    assert len(frame) == FRAME_HEADER.size + 1 + 3
    assert frame[FRAME_HEADER.size :] == b"sPAY"


@pytest.mark.parametrize("kind", list(Kind))
def test_every_kind_round_trips(kind: Kind) -> None:
    frame = encode_frame(kind, 5, 6, 0, b"", b"")
    assert frame_kind(frame) == kind
    assert parse_frame(frame).kind == kind


def test_stmgr_destination_is_negative() -> None:
    frame = encode_frame(Kind.ROOTS, STMGR, 4, 1, b"", encode([1, 2]))
    assert STMGR == -1
    assert frame_dest(frame) == STMGR
    assert parse_frame(frame).dest == STMGR


def test_large_values_and_empty_parts() -> None:
    frame = encode_frame(Kind.METRICS, 2**31 - 1, -(2**31), 2**32 - 1, b"", b"")
    parsed = parse_frame(frame)
    assert (parsed.dest, parsed.src, parsed.arg) == (2**31 - 1, -(2**31), 2**32 - 1)
    assert parsed.stream == ""
    assert bytes(parsed.payload) == b""


def test_unicode_stream_name() -> None:
    name = "événements"
    frame = encode_frame(Kind.DATA, 1, 1, 0, name.encode(), b"x")
    parsed = parse_frame(frame)
    assert parsed.stream == name
    assert bytes(parsed.payload) == b"x"


def test_header_helpers_accept_memoryview() -> None:
    frame = memoryview(encode_frame(Kind.FAIL, 9, 1, 1, b"st", b"p"))
    assert frame_kind(frame) == Kind.FAIL
    assert frame_dest(frame) == 9
    parsed = parse_frame(frame)
    assert parsed.stream == "st"
    assert bytes(parsed.payload) == b"p"


def test_payload_is_a_zero_copy_view() -> None:
    buf = bytearray(encode_frame(Kind.DATA, 1, 1, 1, b"s", b"abc"))
    parsed = parse_frame(memoryview(buf))
    buf[-1] = ord("z")
    assert bytes(parsed.payload) == b"abz"


FRAMES = [
    encode_frame(Kind.DATA, 2, 1, 1, b"default", encode([["x"]])),
    encode_frame(Kind.ACK, 1, 2, 1, b"", encode([5, 6])),
    encode_frame(Kind.CONTROL, STMGR, 3, 0, b"", encode({"type": "hello"})),
]
STREAM = b"".join(_framed(f) for f in FRAMES)


def test_reader_several_frames_in_one_chunk() -> None:
    reader = FrameReader()
    assert reader.feed(STREAM) == FRAMES
    assert reader.buffered == 0


@pytest.mark.parametrize("cut", range(len(STREAM) + 1))
def test_reader_split_at_every_byte_boundary(cut: int) -> None:
    reader = FrameReader()
    out = reader.feed(STREAM[:cut])
    out += reader.feed(STREAM[cut:])
    assert out == FRAMES
    assert reader.buffered == 0


def test_reader_split_at_every_pair_of_boundaries() -> None:
    for a in range(len(STREAM) + 1):
        for b in range(a, len(STREAM) + 1):
            reader = FrameReader()
            out = reader.feed(STREAM[:a]) + reader.feed(STREAM[a:b]) + reader.feed(STREAM[b:])
            assert out == FRAMES, (a, b)
            assert reader.buffered == 0


def test_reader_one_byte_at_a_time() -> None:
    reader = FrameReader()
    out: list[bytes] = []
    for i in range(len(STREAM)):
        got = reader.feed(STREAM[i : i + 1])
        out += got
        assert reader.buffered == i + 1 - sum(len(f) + 4 for f in out)
    assert out == FRAMES
    assert reader.buffered == 0


def test_reader_keeps_an_incomplete_frame() -> None:
    reader = FrameReader()
    whole = _framed(FRAMES[0])
    assert reader.feed(whole[:-1]) == []
    assert reader.buffered == len(whole) - 1
    assert reader.feed(whole[-1:] + whole[:2]) == [FRAMES[0]]
    assert reader.buffered == 2


def test_reader_empty_feed_and_empty_frame() -> None:
    reader = FrameReader()
    assert reader.feed(b"") == []
    assert reader.feed(length_prefix(b"")) == [b""]
    assert reader.buffered == 0


def test_length_prefix_is_little_endian_u32() -> None:
    assert length_prefix(b"abc") == b"\x03\x00\x00\x00"
    assert length_prefix(b"x" * 258) == b"\x02\x01\x00\x00"


@pytest.mark.parametrize(
    ("frame", "says"),
    [
        (b"", "shorter than the"),  # struct.error before
        (bytes(FRAME_HEADER.size - 1), "shorter than the"),
        (FRAME_HEADER.pack(Kind.DATA, 1, 2, 0, 200) + b"abc", "runs past its end"),  # was cut
        (encode_frame(Kind.DATA, 1, 2, 0, b"\xff\xfe", b""), "not UTF-8"),  # UnicodeDecodeError
    ],
)
def test_bytes_that_are_not_a_frame_are_a_frame_error(frame: bytes, says: str) -> None:
    with pytest.raises(FrameError, match=says):
        parse_frame(frame)
    assert issubclass(FrameError, ValueError)


def test_a_header_too_short_to_route_is_a_frame_error() -> None:
    with pytest.raises(FrameError, match="empty"):
        frame_kind(b"")  # IndexError before
    with pytest.raises(FrameError, match="too short"):
        frame_dest(b"\x01\x00")  # struct.error before


def test_a_huge_declared_length_holds_only_what_arrived() -> None:
    reader = FrameReader()
    assert reader.feed(b"\xff\xff\xff\xff" + b"x" * 10) == []
    assert reader.buffered == 14  # nothing allocated for the 4 GiB it declares
