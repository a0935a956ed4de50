"""The gRPC face of topology masters: one servicer for every topology a process hosts.

Containers call the ``TopologyMaster`` service (``proto/headwater/v1/runtime.proto``)
with their topology's name in every request; ``TopologyDispatch`` hands each
call to that topology's master (``TopologyMaster``) and does nothing else. A
standalone topology master process serves one; the master daemon serves its
cloud topologies' and an agent its edge subgraphs'. No data passes here:
agents' uplinks go to the receivers' stream managers (``runtime/_ingress.py``).

Who may speak for a container is the host's to say (``Authorize``): the
master lets a worker speak only for the containers it gave that worker, an
agent only its own containers; a call that may not is PERMISSION_DENIED.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any

import grpc

from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._tmaster import TopologyMaster

Authorize = Callable[[Any, str, "int | None"], "str | None"]
"""(gRPC context, topology, container or None for any) -> why the caller may not, or None."""


def anyone(context: Any, topology: str, container: int | None) -> str | None:
    return None


class TopologyDispatch(pb_grpc.TopologyMasterServicer):
    """Routes each container's call to the topology master of its topology, by name."""

    def __init__(self, tms: Mapping[str, TopologyMaster], authorize: Authorize = anyone) -> None:
        self.tms = tms
        self.authorize = authorize

    async def _tm(self, name: str, context: Any, container: int | None = None) -> TopologyMaster:
        refused = self.authorize(context, name, container)
        if refused is not None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
        tm = self.tms.get(name)
        if tm is None:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no topology named {name!r}")
        assert tm is not None
        return tm

    async def Register(self, request: pb.RegisterRequest, context: Any) -> pb.RegisterResponse:
        return (await self._tm(request.topology, context, request.container.container)).register(
            request
        )

    async def Watch(self, request: pb.WatchRequest, context: Any) -> AsyncIterator[pb.Command]:
        tm = await self._tm(request.topology, context, request.container)
        async for command in tm.watch(request.container):
            yield command

    async def SendHeartbeat(self, request: pb.Heartbeat, context: Any) -> pb.HeartbeatAck:
        return (await self._tm(request.topology, context, request.container)).heartbeat(request)

    async def AckCheckpoint(self, request: pb.CheckpointAck, context: Any) -> pb.Empty:
        tm = await self._tm(request.topology, context, request.container)
        await self._own_tasks(tm, request.container, [request], context)
        tm.checkpoints.ack(request)
        return pb.Empty()

    async def AckCheckpoints(self, request: pb.CheckpointAcks, context: Any) -> pb.Empty:
        tm = await self._tm(request.topology, context, request.container)
        await self._own_tasks(tm, request.container, request.acks, context)
        for ack in request.acks:  # each speaks for the container the caller may speak for
            ack.topology, ack.container = request.topology, request.container
            tm.checkpoints.ack(ack)
        return pb.Empty()

    @staticmethod
    async def _own_tasks(
        tm: TopologyMaster, container: int, acks: Sequence[pb.CheckpointAck], context: Any
    ) -> None:
        """A container acknowledges its own tasks' snapshots only (the checkpoint counts
        acknowledged tasks: another's would complete it without that task's state)."""
        mine = {i.task_id for i in tm.plan.in_container(container)}
        foreign = sorted({a.task_id for a in acks} - mine)
        if foreign:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"tasks {foreign} are not in container {container} of {tm.topology.name!r}",
            )

    async def AckRestore(self, request: pb.RestoreAck, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context, request.container)).ack_restore(request)
        return pb.Empty()

    async def ReportFailure(self, request: pb.FailureReport, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context, request.container)).report_failure(request)
        return pb.Empty()

    async def AckSwitch(self, request: pb.SwitchAck, context: Any) -> pb.Empty:
        (await self._tm(request.topology, context, request.container)).ack_switch(request)
        return pb.Empty()

    async def PutState(self, request: pb.StateTransfer, context: Any) -> pb.Empty:
        tm = await self._tm(request.topology, context)
        if request.site:  # a keyed move's state to the edge
            tm.site_states.put(request)
        else:  # a rescale's
            tm.edits.put_state(request)
        return pb.Empty()
