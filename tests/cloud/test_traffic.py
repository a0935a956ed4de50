"""The master's byte counts per gRPC method, on a real server."""

from __future__ import annotations

import asyncio
from typing import Any

import grpc

from headwater.cloud.master._traffic import TrafficCounter
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc


class _Cluster(pb_grpc.ClusterServicer):
    async def ReportStatus(self, request: pb.NodeStatus, context: Any) -> pb.Empty:
        return pb.Empty()

    async def Attach(self, request: pb.NodeInfo, context: Any) -> Any:
        for _ in range(3):
            yield pb.NodeCommand(stop=pb.StopContainer(topology="t", container=1))


def test_every_message_in_and_out_is_counted_per_method() -> None:
    async def scenario() -> dict[str, Any]:
        traffic = TrafficCounter()
        server = grpc.aio.server(interceptors=[traffic])
        pb_grpc.add_ClusterServicer_to_server(_Cluster(), server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        try:
            async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
                stub = pb_grpc.ClusterStub(channel)
                status = pb.NodeStatus(node_id="gw", containers=["t/0"])
                await stub.ReportStatus(status)
                await stub.ReportStatus(status)
                assert len([c async for c in stub.Attach(pb.NodeInfo(node_id="gw"))]) == 3
        finally:
            await server.stop(0)
        return traffic.view()

    view = asyncio.run(scenario())
    status_size = pb.NodeStatus(node_id="gw", containers=["t/0"]).ByteSize()
    command_size = pb.NodeCommand(stop=pb.StopContainer(topology="t", container=1)).ByteSize()
    report = view["methods"]["/headwater.v1.Cluster/ReportStatus"]
    assert (report["messages_in"], report["bytes_in"]) == (2, 2 * status_size)
    assert (report["messages_out"], report["bytes_out"]) == (2, 0)  # Empty encodes to nothing
    attach = view["methods"]["/headwater.v1.Cluster/Attach"]
    assert (attach["messages_out"], attach["bytes_out"]) == (3, 3 * command_size)
    assert view["bytes_in"] == 2 * status_size + pb.NodeInfo(node_id="gw").ByteSize()
