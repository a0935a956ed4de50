"""headwater.common.runtime._receiver: an agent's batch is taken, never trusted."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.api import DEAD_LETTERS, Bolt, Spout, Stream, Topology, edge, fields, shuffle
from headwater.common.plan import cloud_part
from headwater.common.runtime._receiver import UplinkSpout, split_batch
from headwater.common.wire import encode
from headwater.common.wire._control import UplinkFeedback
from headwater.testing import TestContext


class _Readings(Spout):
    outputs = (Stream(("sensor", "value")), Stream(("level",), "alerts"))


class _Sink(Bolt):
    def process(self, tup: object) -> None:
        pass


def _receiver() -> tuple[UplinkSpout, TestContext]:
    topology = cloud_part(
        Topology("t")
        .add_spout("readings", _Readings, placement=edge())
        .add_bolt(
            "sink",
            _Sink,
            inputs={("readings", "default"): fields("sensor"), ("readings", "alerts"): shuffle()},
            parallelism=2,  # a fields grouping reads the value it keys on
        )
    )
    ctx = TestContext(topology, "readings")
    spout = UplinkSpout("readings")
    spout.open(ctx)
    ctx.system_messages.clear()  # the resync it sends when it opens
    return spout, ctx


def _take(spout: UplinkSpout, payload: bytes, seq: int = 1) -> None:
    spout.on_uplink("gw-1", seq, seq - 1, memoryview(payload))
    spout.next_tuple()


def test_good_rows_are_emitted_and_the_batch_confirmed() -> None:
    spout, ctx = _receiver()
    _take(spout, encode([["default", ["s1", 1.5]], ["alerts", ["high"]]]))
    assert [(e.stream, e.values) for e in ctx.emitted] == [
        ("default", ["s1", 1.5]),
        ("alerts", ["high"]),
    ]
    assert ctx.counters == {"uplink_batches": 1, "uplink_rows": 2}
    assert ctx.system_messages == [UplinkFeedback("readings", "gw-1", 1, 1)]
    assert spout.last == {"gw-1": 1}


# each raised out of next_tuple before (in the comments), and so crashed the receiver's
# instance again at every restart, as the agent sent the batch again
@pytest.mark.parametrize(
    ("payload", "says"),
    [
        (b"", "does not decode"),  # msgpack's ValueError
        (b"\x81\x90\x01", "does not decode"),  # TypeError: unhashable type: 'list'
        (encode(7), "not a list of rows"),  # TypeError: 'int' object is not iterable
        (encode({"default": 1}), "not a list of rows"),  # ValueError: too many values to unpack
    ],
)
def test_a_batch_that_is_not_rows_is_dead_lettered_and_taken(payload: bytes, says: str) -> None:
    spout, ctx = _receiver()
    _take(spout, payload)
    assert ctx.values() == []
    [(component, reason, tb, record)] = ctx.values(DEAD_LETTERS)
    assert (component, tb) == ("readings", "")
    assert says in reason
    [(row, origin)] = ctx.reported_dead_letters
    assert row == [component, reason, tb, record] and origin == "agent gw-1"
    assert ctx.counters == {"uplink_batches": 1, "uplink_rows": 0, "uplink_bad_rows": 1}
    # taken and confirmed: resent, it would be as bad
    assert spout.last == {"gw-1": 1}
    assert ctx.system_messages == [UplinkFeedback("readings", "gw-1", 1, 1)]


@pytest.mark.parametrize(
    ("row", "says"),
    [
        (["nope", ["s1", 1]], "stream 'nope'"),  # EmitError: undeclared stream
        ([1, ["s1", 1]], "stream 1"),  # EmitError
        (["default", []], "not a list of 2"),  # IndexError in the fields grouping
        (["default", "s1"], "not a list of 2"),  # emitted as ["s", "1"]
        (["default"], "not [stream, values]"),  # ValueError: not enough values to unpack
        ([DEAD_LETTERS, [1, 2, 3, 4]], "not a string"),  # a report the stmgr would refuse
    ],
)
def test_a_bad_row_is_dead_lettered_and_the_good_ones_emitted(row: Any, says: str) -> None:
    spout, ctx = _receiver()
    _take(spout, encode([["default", ["s1", 1]], row, ["default", ["s2", 2]]]))
    assert ctx.values() == [["s1", 1], ["s2", 2]]
    [(component, reason, _, record)] = ctx.values(DEAD_LETTERS)
    assert component == "readings" and says in reason and record == row
    assert ctx.counters == {"uplink_batches": 1, "uplink_rows": 2, "uplink_bad_rows": 1}


def test_an_edge_dead_letter_is_emitted_and_reported() -> None:
    spout, ctx = _receiver()
    letter = ["parse", "ValueError: x", "tb", b"\x00raw"]
    _take(spout, encode([[DEAD_LETTERS, letter]]))
    assert ctx.values(DEAD_LETTERS) == [letter]
    assert ctx.reported_dead_letters == [(letter, "agent gw-1")]
    assert ctx.counters == {"uplink_batches": 1, "uplink_rows": 1}


def test_split_batch_never_raises_and_keeps_the_bytes_it_cannot_read() -> None:
    arity = {"default": 2}
    assert split_batch(encode([["default", [1, 2]]]), arity) == ([("default", [1, 2])], [])
    good, [(record, reason)] = split_batch(memoryview(b"\xc1"), arity)
    assert good == [] and record == b"\xc1" and "does not decode" in reason
