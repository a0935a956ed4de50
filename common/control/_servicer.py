"""The gRPC face of topology masters: one servicer for every topology a process hosts.

Containers call the ``TopologyMaster`` service (``proto/headwater/v1/runtime.proto``)
with their topology's name in every request; ``TopologyDispatch`` hands each
call to that topology's master (``TopologyMaster``) and does nothing else. A
standalone topology master process serves one; the master daemon serves its
cloud topologies' and an agent its edge subgraphs'. No data passes here:
agents' uplinks go to the receivers' stream managers (``runtime/_ingress.py``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any

import grpc

from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._tmaster import TopologyMaster


class TopologyDispatch(pb_grpc.TopologyMasterServicer):
    """Routes each container's call to the topology master of its topology, by name."""

    def __init__(self, tms: Mapping[str, TopologyMaster]) -> None:
        self.tms = tms

    async def _tm(self, name: str, context: Any) -> TopologyMaster:
        tm = self.tms.get(name)
        if tm is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no topology named {name!r}")
        assert tm is not None
        return tm

    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.RegisterResponse:
        return (await self._tm(request.topology, context)).register(request)

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.Command]:
        tm = await self._tm(request.topology, context)
        async for command in tm.watch(request.container):
            yield command

    async def SendHeartbeat(self, request: pb.Heartbeat, context: Any) -> pb.HeartbeatAck:
        return (await self._tm(request.topology, context)).heartbeat(request)

    async def AckCheckpoint(self, request: pb.CheckpointAck, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context)).checkpoints.ack(request)
        return pb.Empty()

    async def AckRestore(self, request: pb.RestoreAck, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context)).ack_restore(request)
        return pb.Empty()

    async def ReportFailure(self, request: pb.FailureReport, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context)).report_failure(request)
        return pb.Empty()

    async def AckSwitch(self, request: pb.SwitchAck, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context)).ack_switch(request)
        return pb.Empty()

    async def PutState(self, request: pb.StateTransfer, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context)).edits.put_state(request)
        return pb.Empty()
