"""The gateway's way out over a real Unix socket pair: frames the executor sends are written
from its own thread while nothing is queued ahead of them, and otherwise through the queue,
in order either way, whole, with the queue's high mark still holding the sender back."""

from __future__ import annotations

import socket
import threading
from collections import deque
from collections.abc import Iterator

import pytest

from headwater.common.runtime._gateway import Gateway
from headwater.common.runtime._queues import ByteQueue
from headwater.common.wire import FrameReader
from headwater.common.wire._control import Alive, control_frame

from ..._wait import wait_for

HEARTBEAT = control_frame(Alive(), src=0)


@pytest.fixture
def wired() -> Iterator[tuple[Gateway, socket.socket]]:
    ours, stmgr = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8192)
    gateway = Gateway(ours, ByteQueue(1 << 20, 1 << 19), ByteQueue(64 << 10, 32 << 10), deque())
    gateway.start()
    try:
        yield gateway, stmgr
    finally:
        gateway.close(5.0)
        ours.close()
        stmgr.close()


def _frames(stmgr: socket.socket, count: int) -> list[bytes]:
    """The next ``count`` frames the stmgr's side reads, heartbeats left out."""
    reader = FrameReader()
    got: list[bytes] = []
    stmgr.settimeout(10)
    while len(got) < count:
        chunk = stmgr.recv(4096)
        assert chunk, f"the socket closed after {len(got)} frames"
        got += [f for f in reader.feed(chunk) if f != HEARTBEAT]
    assert len(got) == count
    return got


def _taken(gateway: Gateway) -> None:
    wait_for(lambda: gateway._direct, 10, "the gateway taking its socket", interval=0.005)


def test_frames_sent_with_the_socket_free_arrive_in_order_without_the_queue(
    wired: tuple[Gateway, socket.socket],
) -> None:
    gateway, stmgr = wired
    _taken(gateway)
    sent = [b"frame %d " % i * 10 for i in range(200)]
    for frame in sent:
        gateway.send(frame)
        assert not gateway.outbox  # written from this thread: nothing went through the queue
        assert _frames(stmgr, 1) == [frame]


def test_a_reader_slower_than_the_sender_gets_every_frame_whole_and_in_order(
    wired: tuple[Gateway, socket.socket],
) -> None:
    gateway, stmgr = wired
    _taken(gateway)
    sent = [bytes([i % 251]) * (1000 + 37 * i) for i in range(300)]  # 1.9 MB: past the buffer

    def sender() -> None:
        for frame in sent:
            gateway.send(frame)

    thread = threading.Thread(target=sender)
    thread.start()
    try:  # nothing read until the socket and the queue are full: the sender is held back
        wait_for(gateway.outbox.over_high, 10, "the outbox past its high mark", interval=0.005)
        assert _frames(stmgr, len(sent)) == sent
    finally:
        thread.join(10)
    assert not thread.is_alive()
    assert gateway.outbox.blocked_s > 0  # the queue's high mark held the sender back


def test_what_is_queued_when_it_stops_is_still_written(
    wired: tuple[Gateway, socket.socket],
) -> None:
    gateway, stmgr = wired
    _taken(gateway)
    sent = [bytes([i]) * 1500 for i in range(40)]  # 60 KB, unread: past the socket's buffer
    for frame in sent:
        gateway.send(frame)
    assert gateway.outbox or gateway._pending  # the socket took part, the rest waits
    gateway.stop()
    assert _frames(stmgr, len(sent)) == sent
    gateway.join(5)
    assert not gateway.is_alive()


def test_before_its_thread_runs_every_frame_is_queued() -> None:
    ours, stmgr = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        idle = Gateway(ours, ByteQueue(1 << 20, 1 << 19), ByteQueue(1 << 20, 1 << 19), deque())
        idle.send(b"waits")  # a blocking socket is never written from the sender's thread
        assert len(idle.outbox) == 1
        idle.close(1.0)
    finally:
        ours.close()
        stmgr.close()
