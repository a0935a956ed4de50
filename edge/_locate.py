"""Where a boundary component's cloud receiver runs, asked of the master (or masters).

``Locator.locate`` asks ``Cluster.LocateReceiver`` on a channel the uplink keeps
open to each master address. One master: while its link is down the call waits for
the channel to be ready again (gRPC reconnecting), so the uplink's backoff does not
grow through a cut. Several (standby masters: only the leader answers nodes): each
is given ``LOCATE_TIMEOUT_S`` to be ready, from the one that answered last, and the
next is asked when it is not.
"""

from __future__ import annotations

import asyncio

import grpc

from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

LOCATE_TIMEOUT_S = 10.0


class Locator:
    def __init__(self, channels: list[grpc.aio.Channel], topology: str) -> None:
        self.channels = channels
        self.topology = topology
        self._at = 0  # the master that answered last

    async def locate(self, component: str) -> str:
        """The receiver's address; the last master's error if none answered."""
        query = pb.ReceiverQuery(topology=self.topology, component=component)
        if len(self.channels) == 1:
            await self.channels[0].channel_ready()
            where = await pb_grpc.ClusterStub(self.channels[0]).LocateReceiver(
                query, timeout=LOCATE_TIMEOUT_S
            )
            return str(where.address)
        failure: BaseException | None = None
        for step in range(len(self.channels)):
            at = (self._at + step) % len(self.channels)
            channel = self.channels[at]
            try:
                async with asyncio.timeout(LOCATE_TIMEOUT_S):
                    await channel.channel_ready()
                where = await pb_grpc.ClusterStub(channel).LocateReceiver(
                    query, timeout=LOCATE_TIMEOUT_S
                )
            except (grpc.RpcError, TimeoutError) as exc:
                failure = exc
                continue
            self._at = at
            return str(where.address)
        assert failure is not None
        raise failure
