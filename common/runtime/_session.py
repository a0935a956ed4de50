"""A container's session with its topology master: register, watch commands, heartbeat.

``MasterSession.run`` dials the topology master, registers this container
(its stream manager's address, pid and incarnation), heartbeats every
``HEARTBEAT_S`` and hands each command of the watch stream to the handler
registered for its kind (``handlers``: the ``Command`` oneof's name ->
coroutine). When the master goes away it dials again with a ``Backoff``.
Given an ``address_file`` instead of an address (``headwater run`` starts its
containers while its topology master starts), it first waits for that file.

The other parts of the container speak to the master through the calls
below (failure reports, acknowledgements, state transfers); each answers
quietly when the master is away, as the master repeats what matters.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any

import grpc

from .._retry import RetryPolicy
from ..security import MASTER_NAME, Transport
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._telemetry import Telemetry

log = logging.getLogger("headwater.container")
HEARTBEAT_S = 1.0
MAX_MESSAGE = 80 << 20  # a revision carries its package (at most 64 MiB)
RECONNECT_POLICY = RetryPolicy(initial=0.1, maximum=2.0)
ADDRESS_POLL_S = (0.005, 0.05)  # looks for the master's address file: from 5 ms, up to 50 ms

CommandHandler = Callable[[pb.Command], Awaitable[None]]
# a job that runs while connected, with the stub (cancelled when the session drops)
ConnectedJob = Callable[[pb_grpc.TopologyMasterStub], Coroutine[Any, Any, None]]


class MasterSession:
    def __init__(
        self,
        address: str,
        topology: str,
        container: int,
        incarnation: int,
        telemetry: Telemetry,
        policy: RetryPolicy = RECONNECT_POLICY,
        transport: Transport | None = None,
        server_name: str = MASTER_NAME,
        address_file: Path | None = None,
    ) -> None:
        self._address = address
        self._address_file = address_file  # where the address will be, while it is ""
        self._transport = transport if transport is not None else Transport.insecure()
        self._server_name = server_name
        self._topology = topology
        self._container = container
        self._incarnation = incarnation
        self._telemetry = telemetry
        self._policy = policy
        self.stub: pb_grpc.TopologyMasterStub | None = None  # None while not registered
        self._batched_acks = True  # until a master answers that it has no AckCheckpoints
        self.handlers: dict[str, CommandHandler] = {}
        self.while_connected: list[ConnectedJob] = []

    async def run(self, stmgr_address: str) -> None:
        """Stay registered and watching until cancelled."""
        if not self._address and self._address_file is not None:
            self._address = await wait_for_address(self._address_file)
        backoff = self._policy.start()
        options = [("grpc.max_receive_message_length", MAX_MESSAGE)]
        info = pb.ContainerInfo(
            container=self._container,
            stmgr_address=stmgr_address,
            pid=os.getpid(),
            incarnation=self._incarnation,
        )
        tried = 0  # failed sessions: of several masters (standbys), the next is tried
        while True:
            addresses = [a for a in self._address.split(",") if a]
            try:
                async with self._transport.channel(
                    addresses[tried % len(addresses)], to=self._server_name, options=options
                ) as channel:
                    stub = pb_grpc.TopologyMasterStub(channel)
                    await stub.Register(pb.RegisterRequest(topology=self._topology, container=info))
                    self.stub = stub
                    self._batched_acks = True  # (a master failed over to may have the call)
                    loop = asyncio.get_running_loop()
                    jobs = [loop.create_task(self._heartbeat(stub))]
                    jobs += [loop.create_task(job(stub)) for job in self.while_connected]
                    try:
                        watch = stub.Watch(
                            pb.WatchRequest(topology=self._topology, container=self._container)
                        )
                        backoff.reset()
                        async for command in watch:
                            await self.dispatch(command)
                    finally:
                        for job in jobs:
                            job.cancel()
                        self.stub = None
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                log.debug("topology master unreachable: %s", exc)
            tried += 1
            await asyncio.sleep(backoff.next_delay())

    async def dispatch(self, command: pb.Command) -> None:
        which = command.WhichOneof("command")
        handler = self.handlers.get(which) if which else None
        if handler is None:
            log.debug("no handler here for a %r command", which)
            return
        await handler(command)

    async def _heartbeat(self, stub: pb_grpc.TopologyMasterStub) -> None:
        while True:
            beat, reports = self._telemetry.heartbeat()
            try:
                await stub.SendHeartbeat(beat)
            except grpc.RpcError as exc:  # beat on: a silent container gets killed
                log.debug("heartbeat not delivered: %s", exc)
                self._telemetry.give_back(reports)
            await asyncio.sleep(HEARTBEAT_S)

    # -- calls to the master ------------------------------------------------------
    async def report_failure(self, reason: str, task: int | None = None) -> bool:
        """Tell the master that ``task`` (or a part of this container) failed; False if it
        could not be told."""
        if self.stub is None:
            return False
        report = pb.FailureReport(topology=self._topology, container=self._container, reason=reason)
        if task is not None:
            report.task_id = task
        try:
            await self.stub.ReportFailure(report)
        except grpc.RpcError:
            return False
        return True

    async def ack_restore(self, r: pb.Restore, ok: bool, error: str = "") -> None:
        if self.stub is None:
            return
        try:
            await self.stub.AckRestore(
                pb.RestoreAck(
                    topology=self._topology,
                    container=self._container,
                    epoch=r.epoch,
                    checkpoint_id=r.checkpoint_id,
                    ok=ok,
                    error=error,
                )
            )
        except grpc.RpcError as exc:
            log.debug("restore ack not delivered: %s", exc)

    async def ack_switch(self, revision: int, ok: bool, error: str = "") -> None:
        if self.stub is None:
            return
        try:
            await self.stub.AckSwitch(
                pb.SwitchAck(
                    topology=self._topology,
                    container=self._container,
                    revision=revision,
                    ok=ok,
                    error=error,
                )
            )
        except grpc.RpcError as exc:
            log.debug("switch ack not delivered: %s", exc)

    async def ack_checkpoint(
        self, task: int, checkpoint: int, epoch: int, size: int, declined: str = ""
    ) -> None:
        if self.stub is None:
            return
        try:
            await self.stub.AckCheckpoint(
                self._checkpoint_ack(task, checkpoint, epoch, size, declined)
            )
        except grpc.RpcError as exc:
            log.debug("checkpoint ack not delivered: %s", exc)

    def _checkpoint_ack(
        self, task: int, checkpoint: int, epoch: int, size: int, declined: str
    ) -> pb.CheckpointAck:
        return pb.CheckpointAck(
            topology=self._topology,
            container=self._container,
            task_id=task,
            checkpoint_id=checkpoint,
            epoch=epoch,
            size_bytes=size,
            declined=declined,
        )

    async def ack_checkpoints(self, acks: list[tuple[int, int, int, int, str]]) -> None:
        """(task, checkpoint, epoch, size, declined) of several tasks in one call; one by one
        to a master that has no ``AckCheckpoints`` (an older version)."""
        if self.stub is None or not acks:
            return
        if self._batched_acks:
            message = pb.CheckpointAcks(
                topology=self._topology,
                container=self._container,
                acks=[self._checkpoint_ack(*ack) for ack in acks],
            )
            try:
                await self.stub.AckCheckpoints(message)
                return
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.UNIMPLEMENTED:
                    log.debug("checkpoint acks not delivered: %s", exc)
                    return
                self._batched_acks = False
        for ack in acks:
            await self.ack_checkpoint(*ack)

    async def put_state(
        self,
        revision: int,
        component: str,
        task: int,
        checkpoint: int,
        blob: bytes,
        site: str = "",
    ) -> None:
        """A retiring task's snapshot, for the new tasks of its rescaled component."""
        if self.stub is None:
            log.warning("the state of task %d did not reach the master: not connected", task)
            return
        try:
            await self.stub.PutState(
                pb.StateTransfer(
                    topology=self._topology,
                    revision=revision,
                    component=component,
                    task_id=task,
                    checkpoint_id=checkpoint,
                    blob=blob,
                    site=site,
                )
            )
        except grpc.RpcError as exc:
            log.warning("the state of task %d did not reach the master: %s", task, exc)


async def wait_for_address(path: Path) -> str:
    """The topology master's gRPC address, once it has written ``path`` (atomically, once it
    listens): looked for every 5 ms at first, then every 50 ms."""
    delay, most = ADDRESS_POLL_S
    while True:
        try:
            return str(json.loads(path.read_text())["grpc"])
        except FileNotFoundError:
            pass
        await asyncio.sleep(delay)
        delay = min(most, delay * 2)
