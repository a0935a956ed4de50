"""The uplink through the topology master, as the cloud side of it stands today.

An agent's batch arrives as an ``uplink`` command and goes to the local
receiver standing in for its component; the receivers' feedback goes back to
the master, in order, while the session is connected. (Issue 14 moves the
uplink to the data plane, through an ingress on the stream manager; this
module then goes.)
"""

from __future__ import annotations

import asyncio
import logging

import grpc

from ..wire._control import UplinkBatch, UplinkFeedback
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._revisions import Revisions
from ._stmgr import StreamManager

log = logging.getLogger("headwater.container")


class UplinkRelay:
    def __init__(self, topology: str, stmgr: StreamManager, revisions: Revisions) -> None:
        self._topology = topology
        self._stmgr = stmgr
        self._revisions = revisions
        self.feedback: asyncio.Queue[pb.UplinkFeedback] = asyncio.Queue(maxsize=10_000)

    def deliver(self, b: pb.UplinkBatch) -> None:
        """An agent's batch for the receiver standing in for ``b.component``."""
        for task in self._revisions.local_tasks:
            if self._stmgr.task_component[task] == b.component:
                self._stmgr.send_control(
                    task, UplinkBatch(agent=b.agent, seq=b.seq, prev=b.prev, payload=b.payload)
                )
                return  # not connected (restarting): its resync at start rewinds the agent

    def on_feedback(self, msg: UplinkFeedback) -> None:
        fb = pb.UplinkFeedback(
            topology=self._topology, agent=msg.agent, component=msg.component,
            consumed=msg.consumed, confirmed=msg.confirmed,
            resend_after=msg.resend_after, resync=msg.resync,
        )  # fmt: skip
        try:
            self.feedback.put_nowait(fb)
        except asyncio.QueueFull:  # the master is away: the agent's resend timer covers it
            log.debug("uplink feedback dropped: the master is unreachable")

    async def send_feedback(self, stub: pb_grpc.TopologyMasterStub) -> None:
        while True:  # one at a time: feedback keeps its order
            fb = await self.feedback.get()
            try:
                await stub.SendUplinkFeedback(fb)
            except grpc.RpcError as exc:
                log.debug("uplink feedback not delivered: %s", exc)
