"""The ingress: where agents' uplink streams enter the cloud's data plane.

Every stream manager serves the ``Ingress`` gRPC service on its data-plane
server, beside ``StreamManager.Exchange``. An agent asks the master where
the receiver of a boundary component runs (control only) and dials that
container's stream manager: one stream per (agent, component), opened with
a hello that names them. Each batch that comes up is handed to the receiver
task as an UPLINK frame (the rows stay the bytes the agent sent); the
receiver's answers (``uplink_feedback`` control messages from the instance)
go down the stream of the agent they name, or, for a receiver that
(re)started, to every agent streaming to it. The master never carries a
batch or a confirmation.

A stream manager that does not host the receiver refuses the stream
(NOT_FOUND), as it does once a switch or a rescale moves the receiver away:
the agent asks the master again. Nothing here decides what is taken: the
receiver's ``ReplayFilter`` does, in its checkpointed state.

Security: the server is the stream manager's, bound where the container was
told (``--host``, loopback by default) and without TLS for now; the one
place that will take credentials is ``StreamManager.start_peer_server``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

import grpc

from .._ids import node_id_problem
from ..api import Topology
from ..plan._domains import receives_uplink
from ..security import TRUSTED, Identity, Transport
from ..wire._control import UplinkFeedback
from ..wire._frame import uplink_frame
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc


class IngressHost(Protocol):
    """What the ingress needs of its stream manager: where receivers run, and delivery."""

    @property
    def container(self) -> int: ...

    @property
    def topology(self) -> Topology: ...

    @property
    def local_tasks(self) -> set[int]: ...

    @property
    def task_component(self) -> Mapping[int, str]: ...

    @property
    def transport(self) -> Transport:
        """How agents are authenticated (and found revoked)."""
        ...

    def deliver(self, task: int, frame: bytes) -> None:
        """Hand ``frame`` to local ``task`` (or park it for the task)."""


log = logging.getLogger("headwater.ingress")


class Ingress(pb_grpc.IngressServicer):
    """The agents' open streams into one stream manager, and the way back to them."""

    def __init__(self, stmgr: IngressHost) -> None:
        self.stmgr = stmgr
        # (component, agent) -> that stream's feedback queue
        self.streams: dict[tuple[str, str], asyncio.Queue[pb.UplinkFeedback]] = {}
        self.batches = self.bytes = 0

    def receiver_task(self, component: str) -> int | None:
        """The local task of ``component``'s receiver, or None if it runs elsewhere."""
        stmgr = self.stmgr
        if not any(c.name == component and receives_uplink(c) for c in stmgr.topology.components):
            return None
        for task in sorted(stmgr.local_tasks):
            if stmgr.task_component.get(task) == component:
                return task
        return None

    def _refusal(self, hello: pb.UplinkHello) -> str | None:
        problem = node_id_problem(hello.agent)
        if problem is not None:
            return problem
        if hello.topology != self.stmgr.topology.name:
            return f"this stream manager runs {self.stmgr.topology.name!r}, not {hello.topology!r}"
        if self.receiver_task(hello.component) is None:
            return f"no receiver of {hello.component!r} here: ask the master where it runs"
        return None

    # -- from the receiver -------------------------------------------------------
    def feedback(self, msg: UplinkFeedback) -> None:
        """A receiver's ``UplinkFeedback``: down its agent's stream, or a resync to all."""
        component, agent = msg.component, msg.agent
        if agent:
            queue = self.streams.get((component, agent))
            if queue is not None:
                queue.put_nowait(
                    pb.UplinkFeedback(
                        topology=self.stmgr.topology.name,
                        agent=agent,
                        component=component,
                        consumed=msg.consumed,
                        confirmed=msg.confirmed,
                        resend_after=msg.resend_after,
                    )
                )
            return  # no stream (the agent is away): it starts after its last confirmed
        resync = msg.resync
        for (comp, each), queue in self.streams.items():
            if comp == component:
                queue.put_nowait(
                    pb.UplinkFeedback(
                        topology=self.stmgr.topology.name,
                        agent=each,
                        component=component,
                        resend_after=resync.get(each, 0),
                    )
                )

    # -- the service ---------------------------------------------------------------
    async def Uplink(
        self, request_iterator: AsyncIterator[pb.UplinkUp], context: Any
    ) -> AsyncIterator[pb.UplinkFeedback]:
        first = await anext(request_iterator, None)
        if first is None or first.WhichOneof("message") != "hello":
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "an uplink opens with a hello")
        assert first is not None
        hello = first.hello
        refused = self.stmgr.transport.refusal(context, ("agent",))
        identity = self.stmgr.transport.identity(context)
        if refused is None and identity not in (TRUSTED, None) and identity.name != hello.agent:
            refused = f"{identity} cannot send agent {hello.agent!r}'s uplink"
        if refused is not None:
            await context.abort(grpc.StatusCode.PERMISSION_DENIED, refused)
        refusal = self._refusal(hello)
        if refusal is not None:
            await context.abort(grpc.StatusCode.NOT_FOUND, refusal)
        key = (hello.component, hello.agent)
        queue: asyncio.Queue[pb.UplinkFeedback] = asyncio.Queue()
        self.streams[key] = queue  # an agent's newer stream takes over from its older one
        log.info("uplink of %s for %r open", hello.agent, hello.component)
        loop = asyncio.get_running_loop()
        reader = loop.create_task(self._read(hello, request_iterator, identity))
        getter: asyncio.Task[pb.UplinkFeedback] | None = None
        try:
            yield pb.UplinkFeedback(
                topology=hello.topology,
                agent=hello.agent,
                component=hello.component,
                resend_after=-1,
            )
            while not reader.done():
                getter = loop.create_task(queue.get())
                done, _ = await asyncio.wait({getter, reader}, return_when=asyncio.FIRST_COMPLETED)
                if getter in done:
                    fb, getter = getter.result(), None
                    yield fb
            if not reader.cancelled() and reader.exception() is None and reader.result():
                await context.abort(grpc.StatusCode.NOT_FOUND, reader.result())
        finally:
            # the agent went away (or the stream was cancelled while waiting): neither task
            # may outlive it
            for task in (getter, reader):
                if task is not None and not task.done():
                    task.cancel()
            await asyncio.gather(
                *(t for t in (getter, reader) if t is not None), return_exceptions=True
            )
            if self.streams.get(key) is queue:
                del self.streams[key]
            log.info("uplink of %s for %r closed", hello.agent, hello.component)

    async def _read(
        self,
        hello: pb.UplinkHello,
        requests: AsyncIterator[pb.UplinkUp],
        identity: Identity | None,
    ) -> str:
        """Hand each batch to the receiver; why the stream must end ("" when the agent ended it)."""
        transport = self.stmgr.transport
        async for up in requests:
            if identity is not None and transport.revoked(identity):
                return f"{identity} is revoked"
            if up.WhichOneof("message") != "batch":
                continue
            b = up.batch
            if b.agent != hello.agent or b.component != hello.component:
                log.warning(
                    "uplink of %s for %r sent a batch as %s for %r: dropped (a stream "
                    "speaks for its hello only)",
                    hello.agent,
                    hello.component,
                    b.agent,
                    b.component,
                )
                continue
            task = self.receiver_task(b.component)
            if task is None:  # moved by a switch: the agent asks the master again
                return f"the receiver of {b.component!r} left this container"
            self.batches += 1
            self.bytes += len(b.payload)
            self.stmgr.deliver(task, uplink_frame(task, b.agent, b.seq, b.prev, b.payload))
        return ""

    def metrics(self) -> list[tuple[str, str, float]]:
        scope = f"container:{self.stmgr.container}"
        return [
            (scope, "ingress_streams", float(len(self.streams))),
            (scope, "ingress_batches", float(self.batches)),
            (scope, "ingress_bytes", float(self.bytes)),
        ]
