"""The master's gRPC face to nodes: the ``Cluster`` service, authorised by certificate.

Every call's caller is the identity its certificate names (``Transport.identity``;
with ``--insecure``, anyone). A node attaches and reports as itself only; it
fetches only the packages of what the master gave it; an agent locates only
the receivers of topologies whose edge subgraph it runs; a revoked node is
refused everything. The topology masters' service (``TopologyDispatch``)
is authorised here too: a worker speaks only for the containers the master
gave it. A worker returns logs (``ReturnLogs``) only for a container the
master gave it and only to a request the master made of that very worker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import grpc

from headwater.common._exceptions import PackageMismatchError
from headwater.common._ids import node_id_problem
from headwater.common.control import TopologyDispatch
from headwater.common.security import TRUSTED, Identity, Transport
from headwater.common.statemgr import StateError
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._enrolment import EnrolmentRefused
from ._master import Master

log = logging.getLogger("headwater.master")


class Gate:
    """Who the caller is, and whether the master lets it do a thing."""

    def __init__(self, master: Master, transport: Transport) -> None:
        self.master = master
        self.transport = transport

    def caller(self, context: Any) -> Identity | None:
        identity = self.transport.identity(context)
        if identity is None or identity == TRUSTED:
            return identity
        enrolment = self.master.nodes.enrolment
        if enrolment is not None and enrolment.refusal(identity) is not None:
            return None
        return identity

    async def node(self, context: Any, node_id: str, kind: str | None = None) -> None:
        """Abort unless the caller is the node ``node_id`` (of ``kind``, if given)."""
        identity = self.caller(context)
        if identity == TRUSTED:
            return
        if identity is None:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, self._unknown(context))
        assert identity is not None
        if identity.name != node_id or (kind is not None and identity.role != kind):
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{identity} cannot speak for {kind or 'node'} {node_id!r}",
            )

    def _unknown(self, context: Any) -> str:
        identity = self.transport.identity(context)
        if identity is not None:
            return f"{identity}: revoked"
        return "no valid cluster certificate"

    def container(self, context: Any, topology: str, container: int | None) -> str | None:
        """Why the caller may not speak for ``topology``'s ``container``, or None."""
        identity = self.caller(context)
        if identity == TRUSTED:
            return None
        if identity is None:
            return self._unknown(context)
        dep = self.master.deployments.get(topology)
        if dep is None:
            return None  # the dispatch says there is no such topology
        if identity.role == "worker":
            held = [c for c, n in dep.assignment.items() if n == identity.name]
            if held and (container is None or container in held):
                return None
        return f"{identity} does not run {topology!r} container {container}"

    def logs(self, context: Any, reply: pb.LogsReply) -> tuple[grpc.StatusCode, str] | None:
        """Why the caller may not return ``reply`` (a status and a reason), or None; the
        answer is taken when it may."""
        identity = self.caller(context)
        if identity is None:
            return grpc.StatusCode.UNAUTHENTICATED, self._unknown(context)
        if identity != TRUSTED:
            if identity.role != "worker" or identity.name != reply.node_id:
                return (
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{identity} cannot speak for {reply.node_id!r}",
                )
            refused = self.container(context, reply.topology, reply.container)
            if reply.kind == "spark-job":  # a Spark job's driver log: of the job it runs
                runs = self.master.spark_jobs.runs_on(reply.topology, identity.name)
                refused = None if runs else f"{identity} runs no Spark job {reply.topology!r}"
            if refused is not None:
                return grpc.StatusCode.PERMISSION_DENIED, refused
        # under --insecure (TRUSTED) the reply's own node id stands for the caller
        caller = reply.node_id if identity == TRUSTED else identity.name
        problem = self.master.node_logs.answer(caller, reply)
        if problem is not None:
            return grpc.StatusCode.FAILED_PRECONDITION, problem
        return None


class ClusterService(pb_grpc.ClusterServicer):
    def __init__(self, master: Master, gate: Gate) -> None:
        self.master = master
        self.gate = gate

    async def Attach(self, request: pb.NodeInfo, context: Any) -> AsyncIterator[pb.NodeCommand]:
        problem = node_id_problem(request.node_id)
        if problem is not None:
            await context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        await self.gate.node(context, request.node_id, request.kind)
        async for command in self.master.nodes.attach(request):
            yield command
        # the master ended the session: the node was revoked
        await context.abort(grpc.StatusCode.PERMISSION_DENIED, f"node {request.node_id!r} revoked")

    async def ReportStatus(self, request: pb.NodeStatus, context: Any) -> pb.Empty:
        await self.gate.node(context, request.node_id)
        self.master.nodes.report(request)
        return pb.Empty()

    async def LocateReceiver(self, request: pb.ReceiverQuery, context: Any) -> pb.ReceiverAddress:
        identity = self.gate.caller(context)
        if identity != TRUSTED:
            dep = self.master.deployments.get(request.topology)
            if identity is None or dep is None or identity.name not in dep.agents:
                await context.abort(
                    grpc.StatusCode.PERMISSION_DENIED,
                    f"{identity or 'an unknown caller'} runs no edge subgraph of "
                    f"{request.topology!r}",
                )
        try:
            return self.master.locate(request.topology, request.component)
        except KeyError as exc:
            await context.abort(grpc.StatusCode.NOT_FOUND, str(exc.args[0]))
        except LookupError as exc:
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        raise AssertionError("unreachable")

    async def FetchPackage(self, request: pb.PackageRequest, context: Any) -> pb.Package:
        identity = self.gate.caller(context)
        if identity != TRUSTED and (
            identity is None or request.package not in self.master.packages_of(identity.name)
        ):
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED,
                f"{identity or 'an unknown caller'} was given no package {request.package}",
            )
        store = self.master.package_store(request.package)
        try:  # off the event loop: a package missing here comes from the shared blob store
            data = await asyncio.to_thread(store.get, request.package)
        except KeyError:
            await context.abort(grpc.StatusCode.NOT_FOUND, f"no package {request.package}")
        except PackageMismatchError as exc:
            log.error("%s", exc)
            await context.abort(grpc.StatusCode.DATA_LOSS, str(exc))
        except StateError as exc:  # the blob store did not answer: the node asks again
            await context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return pb.Package(data=data)

    async def ReturnLogs(self, request: pb.LogsReply, context: Any) -> pb.Empty:
        refused = self.gate.logs(context, request)
        if refused is not None:
            await context.abort(*refused)
        return pb.Empty()

    async def Renew(self, request: pb.RenewRequest, context: Any) -> pb.Enrolled:
        identity = self.gate.caller(context)
        enrolment = self.master.nodes.enrolment
        if identity is None or identity == TRUSTED or enrolment is None:
            await context.abort(
                grpc.StatusCode.PERMISSION_DENIED, "only an enrolled node renews its certificate"
            )
        assert identity is not None and enrolment is not None
        try:
            return enrolment.renew(identity, request.csr)
        except EnrolmentRefused as exc:
            await context.abort(exc.code, str(exc))
        raise AssertionError("unreachable")


def add_services(server: grpc.aio.Server, master: Master, transport: Transport) -> None:
    gate = Gate(master, transport)
    pb_grpc.add_TopologyMasterServicer_to_server(
        TopologyDispatch(master.tms, gate.container), server
    )
    pb_grpc.add_ClusterServicer_to_server(ClusterService(master, gate), server)
