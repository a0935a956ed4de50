"""The ingress: an agent's uplink stream into a real stream manager's gRPC server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common.plan import cloud_part, pack_round_robin
from headwater.common.runtime._ipc import InstanceConnection
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.wire import Kind, encode, encode_frame, parse_frame
from headwater.common.wire._frame import STMGR, UPLINK_HEAD
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


TOPOLOGY = (
    Topology("iot")
    .add_spout("src", _Src, placement=edge())
    .add_bolt("sink", _Sink, inputs={"src": shuffle()})
)


def _hello(component: str = "src", agent: str = "gw", topology: str = "iot") -> pb.UplinkUp:
    return pb.UplinkUp(hello=pb.UplinkHello(agent=agent, topology=topology, component=component))


def _batch(seq: int, prev: int, agent: str = "gw") -> pb.UplinkUp:
    return pb.UplinkUp(
        batch=pb.UplinkBatch(
            agent=agent, component="src", seq=seq, prev=prev, payload=encode([["default", [seq]]])
        )
    )


def _feedback_frame(**msg: object) -> bytes:
    body = {
        "type": "uplink_feedback",
        "component": "src",
        "agent": "gw",
        "consumed": 0,
        "confirmed": 0,
        "resend_after": -1,
        "resync": {},
        **msg,
    }
    return encode_frame(Kind.CONTROL, STMGR, 0, 0, b"", encode(body))


async def _until(cond: object, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():  # type: ignore[operator]
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def test_batches_become_uplink_frames_and_feedback_comes_back_on_the_stream() -> None:
    async def scenario() -> None:
        cloud = cloud_part(TOPOLOGY)
        stmgr = StreamManager(cloud, pack_round_robin(cloud, 1), 0)
        address = await stmgr.start_peer_server("127.0.0.1")
        receiver = stmgr.ingress.receiver_task("src")
        assert receiver is not None and stmgr.ingress.receiver_task("sink") is None
        up: asyncio.Queue[pb.UplinkUp | None] = asyncio.Queue()

        async def requests() -> AsyncIterator[pb.UplinkUp]:
            while (msg := await up.get()) is not None:
                yield msg

        try:
            async with grpc.aio.insecure_channel(address) as channel:
                call = pb_grpc.IngressStub(channel).Uplink(requests())
                await up.put(_hello())
                first = await call.read()
                assert (first.agent, first.component, first.resend_after) == ("gw", "src", -1)
                await up.put(_batch(5, 0))
                await up.put(_batch(6, 5, agent="someone-else"))  # not its stream's: dropped
                await _until(lambda: len(stmgr.staging.frames.get(receiver, [])) == 1)
                f = parse_frame(stmgr.staging.frames[receiver][0])
                assert (f.kind, f.dest, f.stream) == (Kind.UPLINK, receiver, "gw")
                assert UPLINK_HEAD.unpack_from(f.payload) == (5, 0)
                assert bytes(f.payload[UPLINK_HEAD.size :]) == encode([["default", [5]]])
                # the receiver answers through its stream manager: down this agent's stream
                conn = InstanceConnection(stmgr)
                stmgr.on_local_frame(conn, _feedback_frame(consumed=5, confirmed=5))
                fb = await call.read()
                assert (fb.topology, fb.agent, fb.consumed, fb.confirmed) == ("iot", "gw", 5, 5)
                # a restarted receiver: every agent streaming to it resends after its state
                stmgr.on_local_frame(conn, _feedback_frame(agent="", resync={"gw": 3}))
                fb = await call.read()
                assert (fb.agent, fb.resend_after) == ("gw", 3)
                assert dict(m[1:] for m in stmgr.metrics() if m[1].startswith("ingress_")) == {
                    "ingress_streams": 1.0,
                    "ingress_batches": 1.0,
                    "ingress_bytes": float(len(encode([["default", [5]]]))),
                }
                await up.put(None)
                await _until(lambda: not stmgr.ingress.streams)
        finally:
            await stmgr.close()

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("hello", "why"),
    [
        (_hello(component="sink"), "no receiver of 'sink' here"),
        (_hello(topology="other"), "runs 'iot', not 'other'"),
        (_hello(agent="no spaces"), "is not a node id"),
        (_batch(1, 0), "opens with a hello"),
    ],
)
def test_a_stream_for_a_receiver_not_here_is_refused(hello: pb.UplinkUp, why: str) -> None:
    async def scenario() -> None:
        cloud = cloud_part(TOPOLOGY)
        stmgr = StreamManager(cloud, pack_round_robin(cloud, 1), 0)
        address = await stmgr.start_peer_server("127.0.0.1")

        async def requests() -> AsyncIterator[pb.UplinkUp]:
            yield hello
            await asyncio.sleep(5)

        try:
            async with grpc.aio.insecure_channel(address) as channel:
                with pytest.raises(grpc.aio.AioRpcError) as err:
                    async for _ in pb_grpc.IngressStub(channel).Uplink(requests()):
                        pass
                code = (
                    grpc.StatusCode.INVALID_ARGUMENT
                    if "hello" in why
                    else grpc.StatusCode.NOT_FOUND
                )
                assert err.value.code() == code and why in str(err.value.details())
        finally:
            await stmgr.close()

    asyncio.run(scenario())
