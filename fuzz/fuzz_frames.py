"""Fuzz the frame decoder: the length-prefixed stream, a frame's header, a control message.

Contract: ``FrameReader.feed`` returns exactly the frames a whole-stream parse finds, however
the bytes are split, and holds no more than it was fed; ``parse_frame`` returns a frame or
raises ``FrameError``; ``decode_control`` returns a message whose fields have their declared
types (so it encodes back to itself) or raises ``ControlError``.
"""

from __future__ import annotations

import struct
from dataclasses import fields
from typing import Any

from _atheris import DataProvider, chunks, instrument, main, provider, value

with instrument("headwater.common.wire"):
    from headwater.common.wire import (
        FRAME_HEADER,
        FrameReader,
        Kind,
        encode,
        encode_frame,
        frame_dest,
        frame_kind,
        parse_frame,
    )
    from headwater.common.wire._control import (
        _BY_TYPE,
        Backpressure,
        ControlError,
        ControlMessage,
        Hello,
        Prepare,
        Restore,
        UplinkFeedback,
        control_frame,
        decode_control,
        encode_control,
    )
    from headwater.common.wire._frame import FrameError, length_prefix, uplink_frame

_TYPES = sorted(_BY_TYPE)


def _whole(stream: bytes) -> tuple[list[bytes], int]:
    """The complete frames of ``stream`` and the bytes left after them (the reference)."""
    frames, pos = [], 0
    while len(stream) - pos >= 4:
        (n,) = struct.unpack_from("<I", stream, pos)
        if len(stream) - pos - 4 < n:
            break
        frames.append(stream[pos + 4 : pos + 4 + n])
        pos += 4 + n
    return frames, len(stream) - pos


def _reader(fdp: DataProvider) -> None:
    reader, fed, got = FrameReader(), b"", []
    for piece in chunks(fdp, 16):
        fed += piece
        got += reader.feed(piece)
        assert reader.buffered <= len(fed), "the reader holds more than it was fed"
    frames, _left = _whole(fed)
    assert got == frames, "a split stream gave other frames than the whole one"


def _frame(data: bytes) -> None:
    try:
        assert frame_kind(data) == data[0]
        dest = frame_dest(data)
        f = parse_frame(data)
    except FrameError:
        return
    assert (f.kind, f.dest) == (data[0], dest)
    assert FRAME_HEADER.size + len(f.stream.encode()) + len(f.payload) == len(data)


def _control(data: bytes) -> None:
    try:
        msg = decode_control(data)
    except ControlError:
        return
    assert decode_control(encode_control(msg)) == msg, "a decoded message does not round-trip"


def _typed(fdp: DataProvider, annotation: str) -> Any:
    """A value of the field's type, mostly; the fuzzer's choice of any value otherwise."""
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return value(fdp)
    text = fdp.ConsumeUnicodeNoSurrogates(8)
    number = fdp.ConsumeIntInRange(-(2**63), 2**64 - 1)
    return {
        "int": number,
        "str": text,
        "bool": fdp.ConsumeBool(),
        "str | None": text if fdp.ConsumeBool() else None,
        "bytes | None": fdp.ConsumeBytes(8) if fdp.ConsumeBool() else None,
        "dict[str, int]": {text: number},
        "dict[str, str]": {text: text},
        "tuple[str, ...]": [text] * fdp.ConsumeIntInRange(0, 2),
    }[annotation]


def _control_fields(fdp: DataProvider) -> None:
    """A map with a known ``type`` and its fields, mostly of their types (msgpack is opaque
    to the fuzzer's coverage, so it would seldom build such a map from bytes alone)."""
    cls = _BY_TYPE[_TYPES[fdp.ConsumeIntInRange(0, len(_TYPES) - 1)]]
    body: dict[str, Any] = {"type": cls.TYPE if fdp.ConsumeIntInRange(0, 15) else value(fdp)}
    for f in fields(cls):
        if fdp.ConsumeIntInRange(0, 7):  # a field left out now and then
            body[f.name] = _typed(fdp, str(f.type))
    if fdp.ConsumeBool():
        body[fdp.ConsumeUnicodeNoSurrogates(8)] = value(fdp)  # a newer sender's field
    _control(encode(body))


def one_input(data: bytes) -> None:
    if not data:
        return
    mode, rest = data[0] % 4, data[1:]
    if mode == 0:
        _reader(provider(rest))
    elif mode == 1:
        _frame(rest)
    elif mode == 2:
        _control(rest)
    else:
        _control_fields(provider(rest))


def seeds() -> list[bytes]:
    messages: list[ControlMessage] = [
        Hello(3, 1234),
        UplinkFeedback("readings", "gw-1", 5, 4, -1, {"gw-2": 7}),
        Prepare(9, file="t.py", plan="p.json", labels={"site": "a"}),
        Restore(2, b"\x80state"),
        Backpressure(True, "1/task:3", ("numbers",)),
    ]
    frames = [
        encode_frame(Kind.DATA, 4, 2, 1, b"default", b"\x91\x92\xa1a\x01"),
        uplink_frame(5, "gw-1", 2, 1, b"\x91\x92\xa7default\x91\x01"),
        *(control_frame(m) for m in messages),
    ]
    stream = b"".join(length_prefix(f) + f for f in frames)
    return [
        b"\x00" + stream,
        *(b"\x01" + f for f in frames),
        *(b"\x02" + encode_control(m) for m in messages),
        *(b"\x03" + bytes([i]) * 24 for i in range(len(_TYPES))),
    ]


if __name__ == "__main__":
    main(one_input, seeds)
