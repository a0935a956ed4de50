"""A worker's stream manager over mutual TLS: who may open an uplink or a peer link, and who
may pose as a worker to an agent (issue 15). Real gRPC servers, real certificates."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import cloud_part, pack_round_robin
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.security import WORKER_NAME, ClusterCA, Credentials, Identity, Transport
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc
from headwater.placement import edge


class _Src(Spout):
    outputs = ("x",)

    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


CLOUD = cloud_part(
    Topology("iot")
    .add_spout("src", _Src, placement=edge())
    .add_bolt("sink", _Sink, inputs={"src": shuffle()})
)


async def _uplink(address: str, creds: Credentials | None, agent: str) -> grpc.StatusCode:
    """Open an uplink as ``agent`` with ``creds``: OK once the stream manager answers."""

    async def hello() -> AsyncIterator[pb.UplinkUp]:
        yield pb.UplinkUp(hello=pb.UplinkHello(agent=agent, topology="iot", component="src"))
        await asyncio.sleep(30)  # hold the stream open while the answer comes

    channel_creds = (
        grpc.ssl_channel_credentials(creds.ca, creds.key, creds.cert)
        if creds is not None
        else grpc.ssl_channel_credentials(CA.cert_pem)
    )
    options = [("grpc.ssl_target_name_override", WORKER_NAME)]
    async with grpc.aio.secure_channel(address, channel_creds, options=options) as ch:
        call = pb_grpc.IngressStub(ch).Uplink(hello(), timeout=10)
        try:
            first = await call.read()
        except grpc.RpcError as exc:
            return exc.code()
        call.cancel()
        assert first.resend_after == -1
        return grpc.StatusCode.OK


async def _exchange(address: str, creds: Credentials) -> grpc.StatusCode:
    async def frames() -> AsyncIterator[pb.Frames]:
        yield pb.Frames(epoch=0)

    channel_creds = grpc.ssl_channel_credentials(creds.ca, creds.key, creds.cert)
    options = [("grpc.ssl_target_name_override", WORKER_NAME)]
    async with grpc.aio.secure_channel(address, channel_creds, options=options) as ch:
        call = pb_grpc.StreamManagerStub(ch).Exchange(frames(), timeout=5)
        try:
            async for _ in call:
                pass
        except grpc.RpcError as exc:
            return exc.code()
        return grpc.StatusCode.OK


CA = ClusterCA.create()


def _worker_stmgr(tmp_path: Path) -> StreamManager:
    CA.issue(Identity("worker", "w1")).save(tmp_path / "w1")
    return StreamManager(CLOUD, pack_round_robin(CLOUD, 1), 0, transport=Transport(tmp_path / "w1"))


def test_an_uplink_needs_the_certificate_of_the_agent_it_speaks_for(tmp_path: Path) -> None:
    async def scenario() -> None:
        stmgr = _worker_stmgr(tmp_path)
        address = await stmgr.start_peer_server("127.0.0.1")
        gw = CA.issue(Identity("agent", "gw"))
        try:
            assert await _uplink(address, gw, "gw") == grpc.StatusCode.OK
            denied = grpc.StatusCode.PERMISSION_DENIED
            assert await _uplink(address, gw, "gw-other") == denied  # another agent's
            worker = CA.issue(Identity("worker", "w2"))
            assert await _uplink(address, worker, "w2") == denied  # not an agent
            # no certificate, or one of another cluster: no handshake
            foreign = ClusterCA.create().issue(Identity("agent", "gw"))
            for creds in (None, foreign):
                assert await _uplink(address, creds, "gw") == grpc.StatusCode.UNAVAILABLE
            # revoked (the list its node keeps beside its credentials): refused
            (tmp_path / "w1" / "revoked.json").write_text(json.dumps(["gw"]))
            assert await _uplink(address, gw, "gw") == denied
        finally:
            await stmgr.close()

    asyncio.run(scenario())


def test_peer_links_are_for_workers_only(tmp_path: Path) -> None:
    async def scenario() -> None:
        stmgr = _worker_stmgr(tmp_path)
        address = await stmgr.start_peer_server("127.0.0.1")
        try:
            agent = CA.issue(Identity("agent", "gw"))
            assert await _exchange(address, agent) == grpc.StatusCode.PERMISSION_DENIED
            peer = CA.issue(Identity("worker", "w2"))
            assert await _exchange(address, peer) == grpc.StatusCode.OK
        finally:
            await stmgr.close()

    asyncio.run(scenario())


def test_an_agent_cannot_pose_as_a_worker_to_another_agent(tmp_path: Path) -> None:
    """A forged feedback needs a server the agent takes for a worker's stream manager: one
    with an agent's certificate (or none of this cluster) fails the handshake."""

    async def scenario() -> None:
        CA.issue(Identity("agent", "gw-evil")).save(tmp_path / "evil")
        server = grpc.aio.server()
        pb_grpc.add_IngressServicer_to_server(pb_grpc.IngressServicer(), server)
        port = Transport(tmp_path / "evil").bind(server, "127.0.0.1:0")
        await server.start()
        try:
            victim = CA.issue(Identity("agent", "gw"))
            code = await _uplink(f"127.0.0.1:{port}", victim, "gw")
            assert code == grpc.StatusCode.UNAVAILABLE
        finally:
            await server.stop(0)

    asyncio.run(scenario())
