"""Backpressure control between stream managers keeps its order and resets per stream."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import pack_round_robin
from headwater.common.runtime._ipc import InstanceConnection
from headwater.common.runtime._peers import ExchangeServicer, PeerLink
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.wire import Kind, decode, encode_frame, marker_frame, parse_frame
from headwater.common.wire._control import (
    Backpressure,
    BackpressureReset,
    Hello,
    control_frame,
)
from headwater.common.wire._frame import length_prefix
from headwater.common.wire.proto import runtime_pb2 as pb


class _Src(Spout):
    outputs = ("x",)

    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


TOPOLOGY = Topology("t").add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})


def _small_buffers() -> Topology:
    """``TOPOLOGY`` with stream-manager buffers of 64 KiB (high) and 32 KiB (low)."""
    topology = Topology(
        "t",
        config={
            "headwater.stmgr.buffer.high.bytes": 64 << 10,
            "headwater.stmgr.buffer.low.bytes": 32 << 10,
        },
    )
    return topology.add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})


async def _connect(
    stmgr: StreamManager, full: bool = False
) -> tuple[InstanceConnection, socket.socket]:
    """An instance's connection to ``stmgr`` over a real socket pair, and the instance's end
    (never read unless the test reads it). ``full``: the socket is filled first, so what the
    stmgr writes stays in the transport's buffer."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    if full:
        try:
            while True:
                ours.send(bytes(1 << 16))
        except BlockingIOError:
            pass
    loop = asyncio.get_running_loop()
    _, conn = await loop.create_connection(lambda: InstanceConnection(stmgr), sock=ours)
    return conn, theirs


def _park_until_throttled(stmgr: StreamManager) -> None:
    """Deliver 200-byte frames to task 2 until what waits for it sets its key ``task:2``."""
    frame = encode_frame(Kind.DATA, 2, 1, 1, b"default", b"\x91\xc4" + bytes([200]) * 201)
    for _ in range(1000):  # 64 KiB is about 300 frames
        stmgr.deliver(2, frame)
        if "task:2" in stmgr.bp.local:
            return


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


def test_a_task_connecting_to_a_full_buffer_keeps_its_spouts_throttled() -> None:
    """Frames parked for a task past the high mark are written on its hello into a socket
    that cannot take them: asyncio says so once, while the key is already on, so the key
    must stay on until that buffer drains, and a replaced connection has no say."""
    topology = _small_buffers()

    async def run() -> None:
        stmgr = StreamManager(topology, pack_round_robin(topology, 1), 0)
        _park_until_throttled(stmgr)  # the sink's instance has not connected
        assert stmgr.throttled == {"src"}
        conn, theirs = await _connect(stmgr, full=True)
        try:
            stmgr.on_instance_hello(conn, 2, 42)
            assert conn.transport is not None and conn.transport.get_write_buffer_size() > 0
            assert conn.write_paused and stmgr.throttled == {"src"}  # before: lifted here

            theirs.setblocking(False)

            def drain() -> bool:
                try:
                    while theirs.recv(1 << 20):
                        pass
                except BlockingIOError:
                    pass
                return "task:2" not in stmgr.bp.local

            for _ in range(500):
                if drain():
                    break
                await asyncio.sleep(0.01)
            assert stmgr.throttled == frozenset()

            stale = InstanceConnection(stmgr)  # a connection replaced since: ignored
            stale.task = 2
            stale.pause_writing()
            assert stmgr.throttled == frozenset()
        finally:
            conn.close()
            theirs.close()

    asyncio.run(run())


def test_frames_held_for_a_retiring_task_throttle_their_spouts_until_its_successor() -> None:
    """A live edit holds what comes after the switch barrier for a retiring task's
    successor: bounded like frames parked for a task not connected (past the high mark its
    spouts stop), and lifted once the successor has taken them."""
    topology = _small_buffers()
    plan = pack_round_robin(topology, 1)

    async def run() -> None:
        stmgr = StreamManager(topology, plan, 0)
        old, old_end = await _connect(stmgr)
        ends = [(old, old_end)]
        try:
            stmgr.on_instance_hello(old, 2, 41)
            stmgr.stage(plan, {2}, at=7)
            stmgr.deliver(2, marker_frame(2, 1, 7))  # src 1 passes it
            frame = encode_frame(Kind.DATA, 2, 1, 1, b"default", b"\x91\xc4" + bytes([200]) * 201)
            held = 0
            for _ in range(1000):  # 64 KiB is about 300 frames
                stmgr.deliver(2, frame)
                held += 1
                if "task:2" in stmgr.bp.local:
                    break
            assert stmgr.throttled == {"src"} and held * len(frame) >= 64 << 10
            stmgr.retire(2)
            new, new_end = await _connect(stmgr)
            ends.append((new, new_end))
            stmgr.on_instance_hello(new, 2, 42)
            new_end.setblocking(False)
            for _ in range(500):
                try:
                    while new_end.recv(1 << 20):
                        pass
                except BlockingIOError:
                    pass
                if "task:2" not in stmgr.bp.local:
                    break
                await asyncio.sleep(0.01)
            assert stmgr.throttled == frozenset()
        finally:
            for conn, end in ends:
                conn.close()
                end.close()

    asyncio.run(run())


def test_a_plan_without_the_task_lifts_what_its_waiting_frames_asked() -> None:
    """Frames parked for a task the next plan removes are dropped with it, and so is the
    throttle they put on its spouts (else the spouts would wait for it for ever)."""
    topology = _small_buffers()
    stmgr = StreamManager(topology, pack_round_robin(topology, 1), 0)
    _park_until_throttled(stmgr)  # the sink's instance has not connected
    assert stmgr.throttled == {"src"}
    alone = Topology("t", config=dict(topology.config)).add_spout("src", _Src)
    stmgr.set_plan(alone, pack_round_robin(alone, 1))
    assert stmgr.throttled == frozenset() and stmgr.staging.total_bytes() == 0


def test_frames_waiting_for_an_unknown_peer_throttle_their_spouts() -> None:
    """Before the plan names a peer's address, what is routed to it waits, bounded like a
    send queue: past the high mark its spouts stop, and the link that takes the frames over
    lifts the key once it has sent them."""
    topology = _small_buffers()

    async def run() -> None:
        stmgr = StreamManager(topology, pack_round_robin(topology, 2), 0)
        frame = encode_frame(Kind.DATA, 2, 1, 1, b"default", b"\x91\xc4" + bytes([200]) * 201)
        parked = 0
        for _ in range(1000):  # 64 KiB is about 300 frames
            stmgr.route(frame)
            parked += len(frame)
            if "peer:1" in stmgr.bp.local:
                break
        assert stmgr.throttled == {"src"} and parked >= 64 << 10
        stmgr.set_peers({1: "127.0.0.1:9"})  # nothing listens: only the queue matters
        link = stmgr.peers[1]
        try:
            assert link.nbytes == parked and stmgr.throttled == {"src"}
            frames = link._frames()
            await frames.__anext__()  # the stream's hello
            while link.nbytes > 32 << 10:
                await frames.__anext__()
            assert stmgr.throttled == frozenset()
        finally:
            link.close()

    asyncio.run(run())


def test_an_instance_connected_before_a_rollback_is_refused() -> None:
    """A dying instance whose hello the stmgr had not read when it rolled back: its hello
    and the data behind it, read after the reset, are dropped, and the task waits for its
    new instance."""

    async def run() -> None:
        stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 1), 0)
        old, theirs = await _connect(stmgr)
        try:
            stmgr.reset(1)  # the rollback; then what the dying instance had sent arrives
            hello = control_frame(Hello(2, 42), src=2)
            data = encode_frame(Kind.DATA, 2, 2, 1, b"default", b"\x91\x91\x01")
            old.data_received(b"".join(length_prefix(f) + f for f in (hello, data)))
            assert stmgr.conns == {} and old.stale
            assert stmgr.staging.nbytes == {}  # its data went nowhere, not even parked

            new, theirs2 = await _connect(stmgr)
            new.data_received(length_prefix(hello) + hello)
            assert stmgr.conns == {2: new}
            new.close()
            theirs2.close()
        finally:
            old.close()
            theirs.close()

    asyncio.run(run())


def test_a_link_replaced_over_its_high_mark_does_not_leave_its_key_on() -> None:
    """A peer that moved (a restarted container listens on a new port) gets a new link from
    the next plan. The old link's queue, past its high mark, had throttled the spouts; the new
    link takes over what the old one never sent and lifts the key once it has sent it, as a
    link that reconnects does. (It dropped that queue with the key still on: no frame was
    ever sent to the peer again, so nothing lifted it, and the spouts stopped for good.)"""
    topology = Topology(
        "t",
        config={
            "headwater.stmgr.buffer.high.bytes": 64 << 10,
            "headwater.stmgr.buffer.low.bytes": 32 << 10,
        },
    )
    topology = topology.add_spout("src", _Src).add_bolt("sink", _Sink, inputs={"src": shuffle()})

    async def run() -> None:
        stmgr = StreamManager(topology, pack_round_robin(topology, 2), 0)
        stmgr.set_peers({1: "127.0.0.1:9"})  # nothing listens: only the queues matter
        old = stmgr.peers[1]
        frame = encode_frame(Kind.DATA, 2, 1, 1, b"default", b"\x91\xc4" + bytes([200]) * 201)
        for _ in range(1000):  # 64 KiB is about 300 frames
            stmgr.route(frame)
            if "peer:1" in stmgr.bp.local:
                break
        assert stmgr.throttled == {"src"}
        queued = old.nbytes
        stmgr.set_peers({1: "127.0.0.1:10"})  # the peer restarted elsewhere
        link = stmgr.peers[1]
        try:
            assert link is not old and link.nbytes == queued and stmgr.throttled == {"src"}
            assert not old.queue and old.nbytes == 0  # the old stream sends none of it
            frames = link._frames()
            await frames.__anext__()  # the stream's hello
            while link.nbytes > 32 << 10:
                await asyncio.wait_for(frames.__anext__(), 1.0)
            assert stmgr.throttled == frozenset()
        finally:
            link.close()
            old.close()

    asyncio.run(run())


def test_a_peers_backpressure_counts_whatever_epoch_it_was_sent_in() -> None:
    """Data of another epoch is dropped, a peer's backpressure is not: it is the state of the
    peer's buffers now. A rollback reaches the containers one by one, so a peer that reset first
    lifts its key in the new epoch while this stmgr is still in the old one; and a restarted
    peer's new stream starts (bp_reset) in epoch 0 until its first restore. Either dropped, the
    peer's old key stayed on here for good: the spouts it names stopped after the restore."""

    async def run() -> None:
        stmgr = StreamManager(TOPOLOGY, pack_round_robin(TOPOLOGY, 2), 0)
        stmgr.reset(4)
        servicer = ExchangeServicer(stmgr)
        on = control_frame(Backpressure(True, "1/task:2", ("src",)))
        off = control_frame(Backpressure(False, "1/task:2", ("src",)))
        data = encode_frame(Kind.DATA, 2, 1, 1, b"default", b"\x91\x91\x01")

        async def stream(*msgs: pb.Frames) -> None:
            async def requests() -> AsyncIterator[pb.Frames]:
                for m in msgs:
                    yield m

            async for _ in servicer.Exchange(requests(), None):
                pass

        # the peer's key, then the peer resets first: its "off" comes in epoch 5
        await stream(pb.Frames(frames=[on], epoch=4), pb.Frames(frames=[off, data], epoch=5))
        stmgr.reset(5)
        assert stmgr.throttled == frozenset()
        assert stmgr.frames_in == 1  # the data of epoch 5 was not routed in epoch 4

        # the peer's key, then it crashes and its new process dials in epoch 0
        await stream(pb.Frames(frames=[on], epoch=5))
        assert stmgr.throttled == {"src"}
        await stream(pb.Frames(frames=[control_frame(BackpressureReset(1))], epoch=0))
        assert stmgr.throttled == frozenset()

    asyncio.run(run())
