"""Fuzz the value codec: the msgpack bytes a tuple batch (a DATA frame's payload) is read from.

Contract: ``decode`` returns a value or raises ``DecodeError``; a value it returns encodes
again (``encode`` takes whatever ``decode`` gives), and that encoding decodes to a value
that encodes the same (decode and encode agree). A columnar batch (a ``DATA_COLUMNS``
frame's payload and the entry count its header declares): ``decode_columns`` returns one or
more lists, each as long as declared, or raises ``DecodeError``, and their rows are that
many value lists of one length each.
"""

from __future__ import annotations

import datetime as dt

from _atheris import instrument, main, provider, value

with instrument("headwater.common.wire"):
    from headwater.common.wire import DecodeError, decode, decode_columns, encode, rows


def _decoded(data: bytes) -> None:
    try:
        got = decode(data)
    except DecodeError:
        return
    again = encode(got)  # anything decode gives, encode takes
    assert encode(decode(again)) == again, "decode and encode disagree"


def _columns(data: bytes) -> None:
    declared, payload = (data[0], data[1:]) if data else (0, b"")
    try:
        cols = decode_columns(payload, declared)
    except DecodeError:
        return
    assert cols and all(type(c) is list and len(c) == declared for c in cols), "a bad shape"
    got = rows(cols)
    assert len(got) == declared, "rows other than the tuples the header declares"
    assert all(type(r) is list and len(r) == len(cols) for r in got), "a row of another width"


def one_input(data: bytes) -> None:
    if data[:1] == b"\x02":  # a columnar batch: the declared count, then the payload
        _columns(data[1:])
    elif data[:1] == b"\x00":  # a valid batch, then the rest of the input appended or cut
        fdp = provider(data[1:])
        body = encode([[value(fdp) for _ in range(3)] for _ in range(fdp.ConsumeIntInRange(0, 4))])
        cut = fdp.ConsumeIntInRange(0, len(body))
        _decoded(body[:cut] + fdp.ConsumeBytes(fdp.remaining_bytes()))
    else:
        _decoded(data)


def seeds() -> list[bytes]:
    moment = dt.datetime(2024, 5, 1, 12, 0, 0, 250_000, tzinfo=dt.UTC)
    batches = [
        [["sensor-1", 21.5, moment], ["sensor-2", None, moment]],
        [[1, 2**64 - 1, -(2**63)], [b"\x00\xff", {"k": [1, {"n": None}]}, True]],
        [[{1: "int key"}, [], ""]],
    ]
    return [
        *(b"\x01" + encode(b) for b in batches),
        b"\x01\xc7\x0c\xff" + bytes(12),  # a 96-bit timestamp
        b"\x01\xd6\xff" + bytes(4),  # a 32-bit one
        b"\x01\xdd\xff\xff\xff\xff",  # an array declaring 2**32 - 1 items
        b"\x00" + bytes(range(40)),
        b"\x02\x03" + encode([["a", "b", "c"], [1, 2, 3]]),
        b"\x02\x02" + encode([["a", "b"], [1]]),  # a column short of the declared count
    ]


if __name__ == "__main__":
    main(one_input, seeds)
