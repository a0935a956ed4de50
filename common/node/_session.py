"""A node's session with the master: attach, carry out its orders, report status.

The node dials the master (it is never dialled) with the certificate it
enrolled for (refreshed first), announces itself (``NodeInfo``) on the attach
stream, hands each order to the node as it comes and reports its status every
``STATUS_S`` meanwhile, and at once after an order that changes what it runs,
so that the master learns what an order started without waiting for the next
beat (the order latency of ``bench fleet``). A lost or refused session is said
in the node's health (``master``; ``fetch`` for orders that could not be
written) and attached again after the node's backoff; its containers keep running meanwhile. It
takes what it uses of the node (its credentials, a few callables), not the
node.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

import grpc

from .._exceptions import HeadwaterError
from .._health import DEGRADED, FAILED, Health
from .._retry import Backoff, RetryPolicy
from ..security import MASTER_NAME
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._identity import NodeCredentials
from ._leader import NEXT_MASTER_S, LeaderEpoch, MasterAddresses

log = logging.getLogger("headwater.node")
STATUS_S = 2.0
CHANGES_WHAT_RUNS = ("run", "stop", "revise")
"""The orders after which the node reports at once (what it runs, at which revision)."""
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
        fence: LeaderEpoch | None = None,
        *,
        beat: float = STATUS_S,
    ) -> None:
        """``master``: where the masters are now (an agent may find them elsewhere), one
        address or several (``a:7070,b:7070``: standbys; the leader alone takes nodes);
        ``fence``: the highest leader epoch obeyed (None: every order is obeyed); ``beat``:
        seconds between status reports (besides those right after an order)."""
        self.credentials = credentials
        self.master = master
        self.fence = fence
        self._masters: MasterAddresses | None = None  # as last read; tried in turn
        self._text = ""  # the address text they were read from
        self.health = health
        self.backoff = backoff
        self.info = info
        self.status = status
        self.obey = obey
        self.stub: pb_grpc.ClusterStub | None = None
        self.beat = beat
        self._soon = asyncio.Event()  # an order came: report now, not on the next beat

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
                await self._after_failure(retry)
                continue
            address = self.address()
            try:
                async with self.credentials.transport.channel(
                    address,
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
                            if self._masters is not None:
                                self._masters.took()
                            if not self._admitted(command, address):
                                break  # a deposed leader's: attach to the one that leads
                            await self.obey(stub, command)
                            if command.WhichOneof("command") in CHANGES_WHAT_RUNS:
                                self._soon.set()
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
                    f"master {address} unreachable ({exc.code().name}); containers keep running",
                )
            except OSError as exc:  # a package or an order that cannot be written: a full disk
                self.health.set(
                    "fetch",
                    FAILED,
                    f"cannot take the master's orders: {exc}; "
                    "trying again (the master repeats them)",
                )
            await self._after_failure(retry)  # the next address (of several) is tried next

    def address(self) -> str:
        """The master address to try now: of several, the next after each failure (read
        again when the node's address text changes: an agent may find its master elsewhere)."""
        text = self.master()
        if self._masters is None or text != self._text:
            self._masters, self._text = MasterAddresses(text), text
        return self._masters.current()

    def failed(self) -> bool:
        """The address tried now did not take the node: the next is tried next. Whether a
        round of the addresses has failed (back off before the next try; else try at once)."""
        return self._masters.failed() if self._masters is not None else True

    async def _after_failure(self, retry: Backoff) -> None:
        """The next address at once where a round is not over, else after the backoff."""
        await asyncio.sleep(retry.next_delay() if self.failed() else NEXT_MASTER_S)

    def _admitted(self, command: pb.NodeCommand, address: str) -> bool:
        """Whether ``command``'s leader epoch may be obeyed (said if not)."""
        if self.fence is None or self.fence.admit(command.leader_epoch):
            return True
        why = (
            f"the master at {address} sent an order of leader epoch {command.leader_epoch}, "
            f"below the {self.fence.seen} this node obeyed: it is no longer the leader"
        )
        self.health.set("master", DEGRADED, f"{why}; trying the others")
        log.warning("refused an order: %s", why)
        return False

    async def _report(self, stub: pb_grpc.ClusterStub) -> None:
        while True:
            self._soon.clear()  # what the report below says includes every order so far
            try:
                await stub.ReportStatus(self.status())
            except grpc.RpcError as exc:  # a lost channel ends the session too; else beat on
                log.debug("status not delivered: %s", exc.code())
                await asyncio.sleep(self.beat)
                continue
            if self.health.has("master"):
                self.health.clear("master")  # it answered: say so at once
                continue
            with contextlib.suppress(TimeoutError):  # the beat, or an order before it
                async with asyncio.timeout(self.beat):
                    await self._soon.wait()
