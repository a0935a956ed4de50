"""Backpressure control between stream managers keeps its order and resets per stream."""

from __future__ import annotations

import asyncio

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import pack_round_robin
from headwater.common.runtime._peers import PeerLink
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.wire import Kind, decode, encode_frame, parse_frame
from headwater.common.wire._control import Backpressure, BackpressureReset, control_frame


class _Src(Spout):
    outputs = ("x",)

    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


TOPOLOGY = Topology("t").add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})


def _controls(frames: list[bytes]) -> list[dict[str, object]]:
    return [decode(parse_frame(f).payload) for f in frames if f[0] == Kind.CONTROL]


def test_an_off_never_overtakes_its_on() -> None:
    async def run() -> None:
        stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 2), 0)
        link = PeerLink(stmgr, 1, "127.0.0.1:9")  # nothing listens: only the queue matters
        stmgr.peers[1] = link
        try:
            frames = link._frames()
            hello = await frames.__anext__()
            assert _controls(list(hello.frames)) == [{"type": "bp_reset", "origin": 0}]
            link.send(encode_frame(Kind.DATA, 2, 1, 1, b"default", b"\x91\x91\x01"))
            stmgr.bp.on("task:2", frozenset({"src"}))
            stmgr.bp.off("task:2")
            batch = list((await frames.__anext__()).frames)
            controls = _controls(batch)
            assert [(c["type"], c["on"]) for c in controls] == [("bp", True), ("bp", False)]
            assert batch[-1][0] == Kind.DATA  # control first, data after
        finally:
            link.close()

    asyncio.run(run())


def test_a_new_stream_resets_what_the_peer_asked_before() -> None:
    stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 2), 0)
    stmgr.route(control_frame(Backpressure(True, "1/task:2", ("src",))))
    stmgr.route(control_frame(Backpressure(True, "3/task:9", ("other",))))
    assert stmgr.throttled == {"src", "other"}
    stmgr.route(control_frame(BackpressureReset(1)))
    assert stmgr.throttled == {"other"}


def test_a_malformed_control_frame_is_dropped() -> None:
    stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 2), 0)
    stmgr.route(encode_frame(Kind.CONTROL, -1, -1, 0, b"", b"\xc1"))  # not msgpack
    stmgr.route(encode_frame(Kind.CONTROL, -1, -1, 0, b"", b"\x81\xa4type\xa2bp"))  # no fields
    assert stmgr.throttled == frozenset()
