"""A node's session with the master: attach, carry out its orders, report status.

The node dials the master (it is never dialled) with the certificate it
enrolled for (refreshed first), announces itself (``NodeInfo``) on the attach
stream, hands each order to the node as it comes and reports its status every
``STATUS_S`` meanwhile. A lost or refused session is said in the node's health
(``master``; ``fetch`` for orders that could not be written) and attached
again after the node's backoff; its containers keep running meanwhile. It
takes what it uses of the node (its credentials, a few callables), not the
node.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import grpc

from .._exceptions import HeadwaterError
from .._health import DEGRADED, FAILED, Health
from .._retry import RetryPolicy
from ..security import MASTER_NAME
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._identity import NodeCredentials

log = logging.getLogger("headwater.node")
STATUS_S = 2.0
Obey = Callable[[pb_grpc.ClusterStub, pb.NodeCommand], Awaitable[None]]


class MasterSession:
    """Attached to the master while ``stub`` is set; ``run`` keeps it so until cancelled."""

    def __init__(
        self,
        credentials: NodeCredentials,
        master: Callable[[], str],
        health: Health,
        backoff: RetryPolicy,
        info: Callable[[], pb.NodeInfo],
        status: Callable[[], pb.NodeStatus],
        obey: Obey,
    ) -> None:
        self.credentials = credentials
        self.master = master  # where it is now (an agent may find it elsewhere)
        self.health = health
        self.backoff = backoff
        self.info = info
        self.status = status
        self.obey = obey
        self.stub: pb_grpc.ClusterStub | None = None

    async def run(self) -> None:
        retry = self.backoff.start()
        while True:
            try:
                await self.credentials.refresh()
            except asyncio.CancelledError:
                raise
            except (HeadwaterError, grpc.RpcError, OSError) as exc:
                why = exc.details() if isinstance(exc, grpc.RpcError) else str(exc)
                self.health.set("master", FAILED, f"cannot enrol or renew: {why}")
                log.error("cannot enrol or renew: %s", why)
                await asyncio.sleep(retry.next_delay())
                continue
            try:
                async with self.credentials.transport.channel(
                    self.master(),
                    to=MASTER_NAME,
                    options=[
                        ("grpc.max_receive_message_length", 64 << 20),
                    ],
                ) as channel:
                    self.stub = stub = pb_grpc.ClusterStub(channel)
                    status = asyncio.get_running_loop().create_task(self._report(stub))
                    try:
                        async for command in stub.Attach(self.info()):
                            retry.reset()
                            await self.obey(stub, command)
                    finally:
                        status.cancel()
                        self.stub = None
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                if exc.code() in (
                    grpc.StatusCode.PERMISSION_DENIED,
                    grpc.StatusCode.UNAUTHENTICATED,
                ):
                    self.health.set(
                        "master", FAILED, f"the master refuses this node: {exc.details()}"
                    )
                    log.error("the master refuses this node: %s", exc.details())
                    await asyncio.sleep(retry.next_delay())
                    continue
                self.health.set(
                    "master",
                    DEGRADED,
                    f"master {self.master()} unreachable "
                    f"({exc.code().name}); containers keep running",
                )
            except OSError as exc:  # a package or an order that cannot be written: a full disk
                self.health.set(
                    "fetch",
                    FAILED,
                    f"cannot take the master's orders: {exc}; "
                    "trying again (the master repeats them)",
                )
            await asyncio.sleep(retry.next_delay())

    async def _report(self, stub: pb_grpc.ClusterStub) -> None:
        while True:
            try:
                await stub.ReportStatus(self.status())
            except grpc.RpcError as exc:  # a lost channel ends the session too; else beat on
                log.debug("status not delivered: %s", exc.code())
                await asyncio.sleep(STATUS_S)
                continue
            if self.health.has("master"):
                self.health.clear("master")  # it answered: say so at once
                continue
            await asyncio.sleep(STATUS_S)
