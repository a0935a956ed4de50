"""A node attaches to whichever of several masters takes it, and refuses the orders of a
deposed leader (a leader epoch below the highest it obeyed), also after a restart."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common._health import Health
from headwater.common._ports import grpc_server
from headwater.common._retry import RetryPolicy
from headwater.common.node._identity import NodeCredentials
from headwater.common.node._leader import EPOCH_FILE, LeaderEpoch, MasterAddresses
from headwater.common.node._session import MasterSession
from headwater.common.security import JoinToken
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from .._ports import free_port


def test_the_highest_epoch_obeyed_is_kept_and_a_lower_one_refused(tmp_path: Path) -> None:
    fence = LeaderEpoch(tmp_path)
    assert fence.seen == 0 and fence.admit(0)  # a master without standbys
    assert fence.admit(3) and fence.seen == 3
    assert (tmp_path / EPOCH_FILE).read_text() == "3\n"
    assert fence.admit(3) and not fence.admit(2) and not fence.admit(0)
    again = LeaderEpoch(tmp_path)  # the node restarted
    assert again.seen == 3 and not again.admit(2)
    (tmp_path / EPOCH_FILE).write_text("three\n")
    with pytest.raises(HeadwaterError, match="highest leader epoch this node obeyed"):
        LeaderEpoch(tmp_path)


def test_several_masters_are_tried_in_turn() -> None:
    addresses = MasterAddresses(" a:1, b:2 ,")
    assert addresses.all == ["a:1", "b:2"] and addresses.current() == "a:1"
    # the node backs off once a round of them failed, not after each
    assert addresses.failed() is False
    assert addresses.current() == "b:2" and str(addresses) == "a:1,b:2"
    assert addresses.failed() is True
    assert addresses.current() == "a:1"
    assert addresses.failed() is False  # a new round
    addresses.took()  # b took the node; later it fails: a round again from there
    assert [addresses.failed(), addresses.failed()] == [False, True]
    assert MasterAddresses("a:1").failed() is True  # one master: every failure backs off
    with pytest.raises(HeadwaterError, match="no master address"):
        MasterAddresses(" , ")


class _Master(pb_grpc.ClusterServicer):
    """A master's Cluster service that sends each attaching node ``orders`` (one test's
    stand-in for the master: the node's session is what is tested)."""

    def __init__(self, orders: list[pb.NodeCommand], hang_up_first: bool = False) -> None:
        self.orders = orders
        self.attaches = 0
        self.hang_up_first = hang_up_first  # the first session ends after its orders

    async def Attach(self, request: pb.NodeInfo, context: Any) -> AsyncIterator[pb.NodeCommand]:
        self.attaches += 1
        for order in self.orders:
            yield order
        if self.attaches > 1 or not self.hang_up_first:
            await asyncio.Event().wait()  # the session stays open

    async def ReportStatus(self, request: pb.NodeStatus, context: Any) -> pb.Empty:
        return pb.Empty()


class _Said(Health):
    """Health that keeps everything said (a later report clears what it shows)."""

    def __init__(self) -> None:
        super().__init__("w1")
        self.said: list[str] = []

    def set(self, key: str, level: Any, message: str) -> None:
        self.said.append(message)
        super().set(key, level, message)


def _order(state: str, epoch: int) -> pb.NodeCommand:
    return pb.NodeCommand(set_state=pb.SetState(topology="t", state=state), leader_epoch=epoch)


def test_a_node_attaches_past_a_dead_master_and_refuses_a_deposed_leaders_orders(
    tmp_path: Path,
) -> None:
    new = _Master([_order("PAUSED", 4)], hang_up_first=True)
    old = _Master([_order("RUNNING", 3)])  # deposed, and has not noticed yet
    dead = free_port()  # nothing listens there
    obeyed: list[tuple[str, int]] = []
    health = _Said()
    fence = LeaderEpoch(tmp_path)

    async def run() -> None:
        servers, ports = [], []
        for master in (new, old):
            server = grpc_server()
            pb_grpc.add_ClusterServicer_to_server(master, server)
            ports.append(server.add_insecure_port("127.0.0.1:0"))
            await server.start()
            servers.append(server)
        masters = f"127.0.0.1:{dead},127.0.0.1:{ports[0]},127.0.0.1:{ports[1]}"

        async def obey(stub: Any, command: pb.NodeCommand) -> None:
            obeyed.append((command.set_state.state, command.leader_epoch))

        session = MasterSession(
            NodeCredentials(tmp_path, "worker", "w1", lambda: masters, insecure=True),
            lambda: masters,
            health,
            RetryPolicy(initial=0.01, maximum=0.05),
            lambda: pb.NodeInfo(node_id="w1", kind="worker"),
            lambda: pb.NodeStatus(node_id="w1"),
            obey,
            fence,
        )
        task = asyncio.get_running_loop().create_task(session.run())
        try:
            async with asyncio.timeout(30):
                # on to the old one, refused, and back; and the new one's order obeyed
                while new.attaches < 2 or len(obeyed) < 2:
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            for server in servers:
                await server.stop(0)

    asyncio.run(run())
    assert obeyed == [("PAUSED", 4), ("PAUSED", 4)]  # the old leader's order, never
    assert fence.seen == 4 and LeaderEpoch(tmp_path).seen == 4
    assert old.attaches == 1
    assert any("no longer the leader" in m for m in health.said), health.said


def test_a_node_not_yet_enrolled_tries_each_master_in_turn(tmp_path: Path) -> None:
    """A standby binds no join port: an agent or a worker given several masters enrols with
    whichever answers, not only the first."""
    dead = free_port()
    masters = f"127.0.0.1:{dead},127.0.0.2:{dead}"
    health = _Said()

    async def run() -> None:
        session = MasterSession(
            NodeCredentials(
                tmp_path,
                "agent",
                "a1",
                lambda: session.address(),  # noqa: PLW0108 (the session is made around it)
                join_token=JoinToken(dead, "id.secret", "sha256:" + "0" * 64),
            ),
            lambda: masters,
            health,
            RetryPolicy(initial=0.01, maximum=0.05),
            lambda: pb.NodeInfo(node_id="a1", kind="agent"),
            lambda: pb.NodeStatus(node_id="a1"),
            lambda stub, command: asyncio.sleep(0),
        )
        enrol = asyncio.get_running_loop().create_task(
            session.credentials.enrol(
                RetryPolicy(initial=0.01, maximum=0.05), health, session.failed
            )
        )
        try:
            async with asyncio.timeout(30):
                while not all(
                    any(f"join port {host}:{dead}" in m for m in health.said)
                    for host in ("127.0.0.1", "127.0.0.2")
                ):
                    await asyncio.sleep(0.01)
        finally:
            enrol.cancel()
            await asyncio.gather(enrol, return_exceptions=True)

    asyncio.run(run())
