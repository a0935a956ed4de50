"""A node's session reports its status at once after an order (common/node/_session.py).

A real gRPC server plays the master's ``Cluster`` service (plaintext, as ``--insecure``):
it takes the node's attach, records each status report, and sends one run order when the
test says. The session's beat is 60 s here, so a report that says the order was taken can
only be the one sent right after it; before, the master heard of it on the next beat
(up to ``STATUS_S`` later: most of a fleet's order latency, ``bench/RESULTS.md``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from headwater.common._health import Health
from headwater.common._retry import RetryPolicy
from headwater.common.node._identity import NodeCredentials
from headwater.common.node._session import MasterSession
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc


class _Master(pb_grpc.ClusterServicer):
    def __init__(self) -> None:
        self.reports: list[pb.NodeStatus] = []
        self.orders: asyncio.Queue[pb.NodeCommand] = asyncio.Queue()
        self.reported = asyncio.Event()

    async def Attach(self, request: pb.NodeInfo, context: Any) -> AsyncIterator[pb.NodeCommand]:
        while True:
            yield await self.orders.get()

    async def ReportStatus(self, request: pb.NodeStatus, context: Any) -> pb.Empty:
        self.reports.append(request)
        self.reported.set()
        return pb.Empty()


async def _until(cond: Any, timeout: float) -> None:
    async with asyncio.timeout(timeout):
        while not cond():
            await asyncio.sleep(0.02)


def test_a_report_follows_an_order_at_once_not_on_the_next_beat(tmp_path: Path) -> None:
    async def scenario() -> None:
        master = _Master()
        server = grpc.aio.server()
        pb_grpc.add_ClusterServicer_to_server(master, server)
        port = server.add_insecure_port("127.0.0.1:0")
        await server.start()
        address = f"127.0.0.1:{port}"
        running: list[str] = []

        async def obey(stub: pb_grpc.ClusterStub, command: pb.NodeCommand) -> None:
            running.append(f"{command.run.topology}/{command.run.container}")

        session = MasterSession(
            NodeCredentials(tmp_path, "agent", "n1", lambda: address, insecure=True),
            lambda: address,
            Health("n1"),
            RetryPolicy(),
            lambda: pb.NodeInfo(node_id="n1", kind="agent"),
            lambda: pb.NodeStatus(node_id="n1", containers=running),
            obey,
            beat=60.0,
        )
        task = asyncio.get_running_loop().create_task(session.run())
        try:
            await _until(lambda: master.reports, 20)  # the first, as the session begins
            assert list(master.reports[0].containers) == []
            await master.orders.put(pb.NodeCommand(run=pb.RunContainer(topology="t")))
            await _until(lambda: len(master.reports) >= 2, 20)  # far sooner than the beat
            assert [list(r.containers) for r in master.reports] == [[], ["t/0"]]
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            await server.stop(None)

    asyncio.run(scenario())
