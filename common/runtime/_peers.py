"""The links between stream managers: one outbound gRPC stream per peer, and the
``Exchange`` servicer that takes the peers' streams in.

Each stmgr dials every peer once and only sends on that stream; what a peer
sends arrives on the stream the peer dialled (``ExchangeServicer``). Frames
ride in protobuf ``Frames`` messages stamped with the sender's epoch; the data
of a message of another epoch was sent before a rollback and is dropped, its
backpressure control frames are not (they say what the peer's buffers hold now).
Both see their stream manager through ``PeerHost``.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import grpc

from .._ports import grpc_server
from .._retry import RetryPolicy
from ..api import RuntimeConfig
from ..security import WORKER_NAME, Transport
from ..wire import Kind
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc


class PeerHost(Protocol):
    """What the peer links and the exchange servicer need of their stream manager."""

    bytes_in: int  # counters, added to per frame
    bytes_out: int
    frames_in: int
    frames_out: int

    @property
    def epoch(self) -> int:
        """The rollback epoch its frames are stamped with (others' are dropped)."""
        ...

    @property
    def rc(self) -> RuntimeConfig:
        """The topology's runtime config (a send queue's water marks)."""
        ...

    @property
    def transport(self) -> Transport:
        """How it dials and authenticates its peers."""
        ...

    @property
    def congestion_off(self) -> Callable[[str], None]:
        """Lift backpressure key ``key`` (a send queue fell below its low mark)."""
        ...

    def congestion_on(self, key: str, task: int | None, container: int | None = None) -> None:
        """Start backpressure for ``key`` (a send queue passed its high mark)."""

    def hello_frames(self) -> list[bytes]:
        """What a new stream to a peer starts with."""
        ...

    def route(self, frame: bytes) -> None:
        """A frame from a peer."""


log = logging.getLogger("headwater.stmgr")
GRPC_OPTIONS = [
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.max_receive_message_length", 64 << 20),
]
SERVER_OPTIONS = [
    *GRPC_OPTIONS,
    # agents' uplinks ping every 5 s to find a cut link (edge/_uplink.py); gRPC's server
    # default (one ping per 5 min without data) answers that with GOAWAY too_many_pings,
    # which dropped every idle uplink about every 20 s
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.min_ping_interval_without_data_ms", 4000),
]
PEER_ROLES = ("worker", "local")
"""Who may open a peer link: a worker's stream manager, or one of ``headwater run``'s."""
BATCH_BYTES = 4 << 20  # the most data one Frames message carries
# reconnecting to a peer: 50 ms doubling up to 2 s, without jitter (a peer that
# restarts is back within a second; its stmgrs need no spreading)
RECONNECT = RetryPolicy(initial=0.05, maximum=2.0, factor=2.0, jitter=False)


def peer_key(container: int) -> str:
    """The backpressure key of the send queue to ``container``."""
    return f"peer:{container}"


class PeerLink:
    """The outbound gRPC stream to one peer stmgr, with a send queue."""

    def __init__(self, stmgr: PeerHost, container: int, address: str) -> None:
        self.stmgr = stmgr
        self.container = container
        self.address = address
        self.key = peer_key(container)
        self.high_water = stmgr.rc.stmgr_high_water
        self.low_water = stmgr.rc.stmgr_low_water
        self.queue: deque[bytes] = deque()
        # control frames overtake data but keep their own order: a backpressure
        # "off" must never overtake the "on" it answers
        self.control: deque[bytes] = deque()
        self.nbytes = 0
        self._ready = asyncio.Event()
        self.connected = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    def send(self, frame: bytes) -> None:
        self.queue.append(frame)
        self.nbytes += len(frame)
        self._ready.set()
        if self.nbytes >= self.high_water:
            self.stmgr.congestion_on(self.key, None, self.container)

    def send_control(self, frame: bytes) -> None:
        self.control.append(frame)
        self._ready.set()

    def clear(self) -> None:
        """A rollback: what is queued belongs to the previous epoch."""
        self.queue.clear()
        self.nbytes = 0

    async def _frames(self) -> AsyncIterator[pb.Frames]:
        # a new stream starts with the whole backpressure state, which supersedes
        # any control frame queued for the broken one
        stmgr = self.stmgr
        self.control.clear()
        yield pb.Frames(frames=stmgr.hello_frames(), epoch=stmgr.epoch)
        while True:
            if not self.queue and not self.control:
                self._ready.clear()
                await self._ready.wait()
            batch: list[bytes] = list(self.control)
            self.control.clear()
            size = 0
            while self.queue and size < BATCH_BYTES:
                f = self.queue.popleft()
                batch.append(f)
                size += len(f)
            self.nbytes -= size
            stmgr.frames_out += len(batch)
            stmgr.bytes_out += size
            if self.nbytes <= self.low_water:
                stmgr.congestion_off(self.key)
            yield pb.Frames(frames=batch, epoch=stmgr.epoch)

    async def _run(self) -> None:
        backoff = RECONNECT.start()
        while True:
            try:
                async with self.stmgr.transport.channel(
                    self.address, to=WORKER_NAME, options=GRPC_OPTIONS
                ) as ch:
                    stub = pb_grpc.StreamManagerStub(ch)
                    call = stub.Exchange(self._frames())
                    self.connected = True
                    backoff.reset()
                    async for _ in call:
                        pass
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                if self.connected:
                    log.warning(
                        "link to container %d (%s) broke: %s",
                        self.container,
                        self.address,
                        exc.code(),
                    )
            self.connected = False
            await asyncio.sleep(backoff.next_delay())

    def close(self) -> None:
        self.task.cancel()

    def give_up(self) -> list[bytes]:
        """Replaced by a link to the peer's new address: stop, and hand over the frames never
        sent (emptied here, so a stream of this link not yet torn down sends none of them
        and lifts no key)."""
        self.close()
        unsent = list(self.queue)
        self.clear()
        self.control.clear()
        return unsent


class ExchangeServicer(pb_grpc.StreamManagerServicer):
    """Takes the streams the peers dialled and routes every frame on them."""

    def __init__(self, stmgr: PeerHost) -> None:
        self.stmgr = stmgr

    async def Exchange(
        self, request_iterator: AsyncIterator[pb.Frames], context: Any
    ) -> AsyncIterator[pb.Frames]:
        stmgr = self.stmgr
        refused = stmgr.transport.refusal(context, PEER_ROLES)
        if refused is not None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
        route = stmgr.route
        async for msg in request_iterator:
            if msg.epoch != stmgr.epoch:
                # data of another epoch belongs to a timeline rolled back (or not yet begun
                # here); the peer's backpressure is the state of its buffers now, whatever
                # the epoch: dropped, a key lifted (or a stream's bp_reset sent) by a peer
                # that reset before this stmgr, or restarted, stayed on here for good
                for frame in msg.frames:
                    if frame[0] == Kind.CONTROL:
                        route(frame)
                continue
            frames = msg.frames
            stmgr.frames_in += len(frames)
            for frame in frames:
                stmgr.bytes_in += len(frame)
                route(frame)
        return
        yield  # type: ignore[unreachable]  # an async generator that never answers


async def serve_peers(
    stmgr: PeerHost, host: str, ingress: pb_grpc.IngressServicer
) -> tuple[grpc.aio.Server, str]:
    """Start the server of ``Exchange`` (peers) and ``Uplink`` (agents, through ``ingress``)
    on ``host`` (any port); the server and its address."""
    server = grpc_server(options=SERVER_OPTIONS)
    pb_grpc.add_StreamManagerServicer_to_server(ExchangeServicer(stmgr), server)
    pb_grpc.add_IngressServicer_to_server(ingress, server)
    port = stmgr.transport.bind(server, f"{host}:0")
    await server.start()
    return server, f"{host}:{port}"
