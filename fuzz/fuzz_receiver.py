"""Fuzz the uplink receiver: what the cloud does with a batch an agent sent.

The ingress hands each batch to the receiver as it came (agent, seq, prev and the rows'
bytes); an agent is outside the cloud's trust, so the input here is all of it. The
receiver runs in the test kit's context, with the topology's real routing (a fields
grouping reads the values it keys on).

Contract: ``on_uplink`` and ``next_tuple`` never raise, whatever the batch; every emit is
on a declared stream with its fields' count; every dead letter reported is
``[component, reason, traceback, record]`` with strings first; every feedback message
encodes and decodes back to itself (the stream manager refuses any other).
"""

from __future__ import annotations

from typing import Any

from _atheris import DataProvider, instrument, main, provider, value

with instrument("headwater.common.runtime._receiver"):
    from headwater.common.api import DEAD_LETTERS, Bolt, Spout, Stream, Topology, edge, shuffle
    from headwater.common.api import fields as by_fields
    from headwater.common.plan import cloud_part
    from headwater.common.runtime._receiver import UplinkSpout
    from headwater.common.wire import encode
    from headwater.common.wire._control import decode_control, encode_control
    from headwater.testing import TestContext


class _Readings(Spout):
    outputs = (Stream(("sensor", "value")), Stream(("level",), "alerts"))


class _Sink(Bolt):
    def process(self, tup: object) -> None:
        pass


TOPOLOGY = cloud_part(
    Topology("fuzz")
    .add_spout("readings", _Readings, placement=edge())
    .add_bolt(
        "sink",
        _Sink,
        inputs={("readings", "default"): by_fields("sensor"), ("readings", "alerts"): shuffle()},
        parallelism=2,
    )
    .add_bolt("dead", _Sink, inputs={("readings", DEAD_LETTERS): shuffle()})
)
ARITY = {s.name: len(s.fields) for s in TOPOLOGY.component("readings").streams}
STREAMS = [*ARITY, "nope", ""]


def _row(fdp: DataProvider) -> Any:
    """A row that is often right (a declared stream, its count of values), often not."""
    pick = fdp.ConsumeIntInRange(0, 3)
    if pick == 0:
        return value(fdp)
    stream = STREAMS[fdp.ConsumeIntInRange(0, len(STREAMS) - 1)]
    n = ARITY.get(stream, 1) + (0 if pick < 3 else fdp.ConsumeIntInRange(-1, 1))
    return [stream, [value(fdp) for _ in range(max(n, 0))]]


def _batch(fdp: DataProvider) -> bytes:
    if fdp.ConsumeBool():  # the rows' bytes as they come
        return fdp.ConsumeBytes(fdp.ConsumeIntInRange(0, 200))
    rows = [_row(fdp) for _ in range(fdp.ConsumeIntInRange(0, 5))]
    body = encode(rows if fdp.ConsumeIntInRange(0, 7) else rows[0] if rows else {})
    return body[: fdp.ConsumeIntInRange(0, len(body))] if fdp.ConsumeBool() else body


def one_input(data: bytes) -> None:
    fdp = provider(data)
    ctx = TestContext(TOPOLOGY, "readings")
    spout = UplinkSpout("readings")
    spout.open(ctx)
    for _ in range(fdp.ConsumeIntInRange(1, 4)):
        agent = ["gw-1", "gw-2", ""][fdp.ConsumeIntInRange(0, 2)]
        seq = fdp.ConsumeIntInRange(-(2**63), 2**63 - 1) if fdp.ConsumeBool() else 1
        prev = fdp.ConsumeIntInRange(-(2**63), 2**63 - 1) if fdp.ConsumeBool() else 0
        spout.on_uplink(agent, seq, prev, memoryview(_batch(fdp)))
        spout.next_tuple()
    for e in ctx.emitted:
        assert ARITY.get(e.stream) == len(e.values), f"emitted {e.values!r} on {e.stream!r}"
    for row, _origin in ctx.reported_dead_letters:
        assert len(row) == 4 and all(type(v) is str for v in row[:3]), row
    for msg in ctx.system_messages:
        assert decode_control(encode_control(msg)) == msg, msg


def seeds() -> list[bytes]:
    return [bytes(range(i, i + 64)) for i in (0, 7, 64, 128)]


if __name__ == "__main__":
    main(one_input, seeds)
