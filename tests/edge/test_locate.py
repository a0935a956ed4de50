"""The uplink asks whichever of several masters answers where a receiver runs."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc
import pytest

from headwater.common._ports import grpc_server
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc
from headwater.edge import _locate
from headwater.edge._locate import Locator

from .._ports import free_port


class _Master(pb_grpc.ClusterServicer):
    def __init__(self, where: str) -> None:
        self.where = where
        self.asked = 0

    async def LocateReceiver(self, request: pb.ReceiverQuery, context: Any) -> pb.ReceiverAddress:
        self.asked += 1
        return pb.ReceiverAddress(address=f"{self.where}/{request.component}")


def test_a_dead_master_is_passed_over_and_the_one_that_answered_is_asked_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_locate, "LOCATE_TIMEOUT_S", 0.5)
    leader = _Master("10.0.0.9:7000")
    dead = free_port()

    async def run() -> tuple[str, str, int]:
        server = grpc_server()
        pb_grpc.add_ClusterServicer_to_server(leader, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        channels = [
            grpc.aio.insecure_channel(f"127.0.0.1:{dead}"),
            grpc.aio.insecure_channel(f"127.0.0.1:{port}"),
        ]
        try:
            locator = Locator(channels, "t")
            first = await locator.locate("a")
            second = await locator.locate("b")  # the one that answered, at once
            return first, second, locator._at
        finally:
            for channel in channels:
                await channel.close()
            await server.stop(0)

    first, second, at = asyncio.run(run())
    assert (first, second, at) == ("10.0.0.9:7000/a", "10.0.0.9:7000/b", 1)
    assert leader.asked == 2


def test_when_no_master_answers_the_last_error_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_locate, "LOCATE_TIMEOUT_S", 0.3)

    async def run() -> None:
        channels = [grpc.aio.insecure_channel(f"127.0.0.1:{free_port()}") for _ in range(2)]
        try:
            await Locator(channels, "t").locate("a")
        finally:
            for channel in channels:
                await channel.close()

    with pytest.raises(TimeoutError):
        asyncio.run(run())
