"""A container's snapshot acknowledgements in one call (``AckCheckpoints``) over real gRPC on
loopback: the servicer hands each to its topology's coordinator as the caller's container,
refuses a caller that may not speak for it, and a session facing an older master that has no
such call acknowledges one by one."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import grpc
import pytest

from headwater.common.control._servicer import TopologyDispatch
from headwater.common.runtime._session import MasterSession
from headwater.common.runtime._telemetry import Telemetry
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._container_kit import RecordingStreamManager

ACKS = [(1, 7, 2, 10, ""), (2, 7, 2, 20, ""), (3, 7, 2, 0, "disk full")]


class _Checkpoints:
    def __init__(self) -> None:
        self.acks: list[tuple[str, int, int, int, int, int, str]] = []

    def ack(self, r: pb.CheckpointAck) -> None:
        self.acks.append(
            (r.topology, r.container, r.task_id, r.checkpoint_id, r.epoch, r.size_bytes, r.declined)
        )


class _Tm:
    """A topology master's parts the servicer uses: tasks 1-4 in container 0, 5 in 1."""

    def __init__(self) -> None:
        self.checkpoints = _Checkpoints()
        self.topology = SimpleNamespace(name="t")
        placed = [SimpleNamespace(task_id=t, container=0 if t < 5 else 1) for t in range(1, 6)]
        self.plan = SimpleNamespace(in_container=lambda c: (i for i in placed if i.container == c))


class _Older(pb_grpc.TopologyMasterServicer):
    """A master from before ``AckCheckpoints``: one acknowledgement a call."""

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def AckCheckpoint(self, request: pb.CheckpointAck, context: Any) -> pb.Empty:
        self.calls.append(request.task_id)
        return pb.Empty()


def _only_container_0(context: Any, topology: str, container: int | None) -> str | None:
    return None if container == 0 else f"may not speak for container {container}"


async def _serving(servicer: pb_grpc.TopologyMasterServicer) -> tuple[grpc.aio.Server, str]:
    server = grpc.aio.server()
    pb_grpc.add_TopologyMasterServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    return server, f"127.0.0.1:{port}"


def _session(address: str, container: int = 0) -> tuple[MasterSession, grpc.aio.Channel]:
    stmgr = RecordingStreamManager()
    session = MasterSession(address, "t", container, 1, Telemetry("t", container, 1, stmgr, dict))
    channel = grpc.aio.insecure_channel(address)
    session.stub = pb_grpc.TopologyMasterStub(channel)
    return session, channel


def test_one_call_carries_every_ack_as_the_caller_s_container() -> None:
    tm = _Tm()

    async def main() -> None:
        server, address = await _serving(TopologyDispatch({"t": tm}, _only_container_0))  # type: ignore[dict-item]
        session, channel = _session(address)
        try:
            await session.ack_checkpoints(ACKS)
            # an ack that names another container is taken as the caller's
            assert session.stub is not None
            forged = pb.CheckpointAck(topology="other", container=5, task_id=4, checkpoint_id=7)
            await session.stub.AckCheckpoints(
                pb.CheckpointAcks(topology="t", container=0, acks=[forged])
            )
            with pytest.raises(grpc.aio.AioRpcError) as refused:
                await session.stub.AckCheckpoints(
                    pb.CheckpointAcks(topology="t", container=1, acks=[forged])
                )
            assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
            # nor another container's task: it would complete the checkpoint without its state
            theirs = pb.CheckpointAck(task_id=5, checkpoint_id=7)
            for call in (
                session.stub.AckCheckpoints(pb.CheckpointAcks(topology="t", acks=[theirs])),
                session.stub.AckCheckpoint(pb.CheckpointAck(topology="t", task_id=5)),
            ):
                with pytest.raises(grpc.aio.AioRpcError) as foreign:
                    await call
                assert foreign.value.code() == grpc.StatusCode.PERMISSION_DENIED
                assert "tasks [5] are not in container 0 of 't'" in str(foreign.value.details())
        finally:
            await channel.close()
            await server.stop(None)

    asyncio.run(main())
    assert tm.checkpoints.acks == [
        ("t", 0, 1, 7, 2, 10, ""), ("t", 0, 2, 7, 2, 20, ""), ("t", 0, 3, 7, 2, 0, "disk full"),
        ("t", 0, 4, 7, 0, 0, ""),
    ]  # fmt: skip


def test_an_older_master_is_acknowledged_one_by_one() -> None:
    older = _Older()

    async def main() -> None:
        server, address = await _serving(older)
        session, channel = _session(address)
        try:
            await session.ack_checkpoints(ACKS)  # UNIMPLEMENTED: then one a call
            await session.ack_checkpoints(ACKS[:1])  # straight to one a call
        finally:
            await channel.close()
            await server.stop(None)

    asyncio.run(main())
    assert older.calls == [1, 2, 3, 1]
