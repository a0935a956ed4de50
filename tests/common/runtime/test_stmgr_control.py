"""Backpressure control between stream managers keeps its order and resets per stream."""

from __future__ import annotations

import asyncio

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import pack_round_robin
from headwater.common.runtime._stmgr import PeerLink, StreamManager
from headwater.common.wire import Kind, decode, encode_frame, parse_frame


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
            stmgr._broadcast_bp("task:2", True, frozenset({"src"}))
            stmgr._broadcast_bp("task:2", False, frozenset({"src"}))
            batch = list((await frames.__anext__()).frames)
            controls = _controls(batch)
            assert [(c["type"], c["on"]) for c in controls] == [("bp", True), ("bp", False)]
            assert batch[-1][0] == Kind.DATA  # control first, data after
        finally:
            link.close()

    asyncio.run(run())


def test_a_new_stream_resets_what_the_peer_asked_before() -> None:
    stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 2), 0)
    stmgr._on_peer_control({"type": "bp", "on": True, "key": "1/task:2", "spouts": ["src"]})
    stmgr._on_peer_control({"type": "bp", "on": True, "key": "3/task:9", "spouts": ["other"]})
    assert stmgr.throttled == {"src", "other"}
    stmgr._on_peer_control({"type": "bp_reset", "origin": 1})
    assert stmgr.throttled == {"other"}
