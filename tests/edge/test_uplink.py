"""headwater.edge._uplink: the sender, against a real gRPC server standing in for the cloud
(the master's LocateReceiver and a stream manager's Ingress, on one server)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import grpc

from headwater._demo.linkproxy import LinkProxy
from headwater.common._retry import RetryPolicy
from headwater.common.security import Transport
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc
from headwater.edge._uplink import RECONNECT_MAX_MS, RETRY, WINDOW, Uplink


class RecordingMaster(pb_grpc.ClusterServicer):
    """Says the receiver is on this very server."""

    def __init__(self) -> None:
        self.address = ""
        self.located = 0

    async def LocateReceiver(self, request: pb.ReceiverQuery, context: Any) -> pb.ReceiverAddress:
        self.located += 1
        return pb.ReceiverAddress(address=self.address)


class RecordingIngress(pb_grpc.IngressServicer):
    """Takes uplink streams; the test answers through ``feedback``."""

    def __init__(self) -> None:
        self.batches: list[pb.UplinkBatch] = []
        self.feedback: asyncio.Queue[pb.UplinkFeedback | None] = asyncio.Queue()
        self.streams = 0
        self.hellos: list[pb.UplinkHello] = []

    async def Uplink(
        self, request_iterator: AsyncIterator[pb.UplinkUp], context: Any
    ) -> AsyncIterator[pb.UplinkFeedback]:
        self.streams += 1

        async def read() -> None:
            async for up in request_iterator:
                if up.WhichOneof("message") == "batch":
                    self.batches.append(up.batch)
                elif up.WhichOneof("message") == "hello":
                    self.hellos.append(up.hello)

        reader = asyncio.get_running_loop().create_task(read())
        yield pb.UplinkFeedback(resend_after=-1)
        try:
            while (fb := await self.feedback.get()) is not None:
                yield fb
        finally:
            reader.cancel()


class StubStmgr:
    container = 0
    transport = Transport.insecure()  # the link itself: tests/integration, with certificates

    def __init__(self) -> None:
        self.congested: set[str] = set()

    def metrics(self) -> list[tuple[str, str, float]]:
        return []

    def congestion_on(self, key: str, task: int | None) -> None:
        self.congested.add(key)

    def congestion_off(self, key: str) -> None:
        self.congested.discard(key)


async def _cloud() -> tuple[grpc.aio.Server, RecordingMaster, RecordingIngress]:
    server = grpc.aio.server()
    master, ingress = RecordingMaster(), RecordingIngress()
    pb_grpc.add_ClusterServicer_to_server(master, server)
    pb_grpc.add_IngressServicer_to_server(ingress, server)
    port = server.add_insecure_port("127.0.0.1:0")
    master.address = f"127.0.0.1:{port}"
    await server.start()
    return server, master, ingress


async def _until(cond: Any, timeout: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not cond():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def _feedback(**kw: Any) -> pb.UplinkFeedback:
    return pb.UplinkFeedback(component="anomaly", **{"resend_after": -1, **kw})


def test_window_rewind_confirm_and_reconnect(tmp_path: Path) -> None:
    async def scenario() -> None:
        server, locator, master = await _cloud()
        stmgr = StubStmgr()
        up = Uplink(
            locator.address,
            "gw",
            "iot",
            tmp_path / "outbox",
            1 << 20,
            stmgr,  # type: ignore[arg-type]
            RetryPolicy(0.01, 0.05),
        )
        seqs = [(cp << 20) | 1 for cp in range(1, 13)]
        for seq in seqs:
            up.put(7, "anomaly", seq, b"rows-%d" % seq)
        task = asyncio.get_running_loop().create_task(up.run())
        try:
            # a window of 8, each naming the batch before it
            await _until(lambda: len(master.batches) == WINDOW)
            await asyncio.sleep(0.2)
            assert [b.seq for b in master.batches] == seqs[:WINDOW]
            assert [b.prev for b in master.batches] == [0, *seqs[: WINDOW - 1]]
            # consumed opens the window: the rest follow
            await master.feedback.put(_feedback(agent="gw", consumed=seqs[3]))
            await _until(lambda: len(master.batches) == 12)
            # the receiver lost some: resend after the third
            await master.feedback.put(_feedback(agent="gw", resend_after=seqs[2]))
            await _until(lambda: len(master.batches) == 12 + 8)
            assert master.batches[12].seq == seqs[3] and master.batches[12].prev == seqs[2]
            # a cloud checkpoint holds the first five: they leave the outbox
            await master.feedback.put(_feedback(agent="gw", confirmed=seqs[4]))
            await _until(lambda: up.backlog == 7)
            # the stream breaks: the new one starts after the last confirmed batch
            sent = len(master.batches)
            await master.feedback.put(None)
            await _until(lambda: master.streams == 2 and len(master.batches) > sent)
            assert master.batches[sent].seq == seqs[5]
            assert master.batches[sent].prev == seqs[4]
            # each stream was opened after asking the master where the receiver is
            assert locator.located == 2
            assert [(h.agent, h.topology, h.component) for h in master.hellos] == [
                ("gw", "iot", "anomaly")
            ] * 2
        finally:
            task.cancel()
            await server.stop(0)
            up.close()

    asyncio.run(scenario())


def test_over_budget_throttles_until_confirmed(tmp_path: Path) -> None:
    stmgr = StubStmgr()
    up = Uplink("127.0.0.1:1", "gw", "iot", tmp_path / "outbox", 100, stmgr)  # type: ignore[arg-type]
    try:
        up.put(7, "anomaly", (1 << 20) | 1, b"x" * 60)
        assert stmgr.congested == set()
        up.put(7, "anomaly", (2 << 20) | 1, b"x" * 60)
        assert stmgr.congested == {"outbox:anomaly"}
        up.put(7, "anomaly", (2 << 20) | 1, b"x" * 60)  # a republication changes nothing
        assert up.nbytes == 120
        up._on_feedback(_feedback(agent="gw", confirmed=(2 << 20) | 1))
        assert (up.nbytes, stmgr.congested) == (0, set())
    finally:
        up.close()


def test_feedback_that_confirms_what_was_never_written_deletes_nothing(tmp_path: Path) -> None:
    """One forged message used to confirm everything and empty the outbox (issue 15)."""
    up = Uplink("127.0.0.1:1", "gw", "iot", tmp_path / "outbox", 1 << 20, StubStmgr())  # type: ignore[arg-type]
    try:
        up.put(7, "anomaly", (1 << 20) | 1, b"x" * 60)
        up.put(7, "anomaly", (2 << 20) | 1, b"x" * 60)
        up._on_feedback(_feedback(agent="gw", confirmed=(9 << 20) | 1))  # never written
        assert (up.backlog, up.nbytes, up.outboxes["anomaly"].confirmed) == (2, 120, 0)
        up._on_feedback(_feedback(agent="gw", confirmed=(1 << 20) | 1))  # a real one still counts
        assert (up.backlog, up.nbytes) == (1, 60)
    finally:
        up.close()


def test_a_cloud_that_knows_less_than_was_confirmed_is_chained_to(tmp_path: Path) -> None:
    """The agent's id changed (upgraded from process-id ids, or another --id): the cloud has
    nothing under it, but the outbox confirmed up to a batch; the next names the cloud's."""

    async def scenario() -> None:
        server, locator, master = await _cloud()
        up = Uplink(
            locator.address,
            "gw-new",
            "iot",
            tmp_path / "outbox",
            1 << 20,
            StubStmgr(),  # type: ignore[arg-type]
            RetryPolicy(0.01, 0.05),
        )
        seqs = [(cp << 20) | 1 for cp in range(1, 4)]
        for seq in seqs:
            up.put(7, "anomaly", seq, b"rows-%d" % seq)
        up._on_feedback(_feedback(agent="gw-old", confirmed=seqs[0]))
        task = asyncio.get_running_loop().create_task(up.run())
        try:
            await _until(lambda: len(master.batches) == 2)
            assert [(b.seq, b.prev) for b in master.batches] == [
                (seqs[1], seqs[0]),
                (seqs[2], seqs[1]),
            ]
            await master.feedback.put(_feedback(agent="gw-new", resend_after=0))  # a gap to it
            await _until(lambda: len(master.batches) == 4)
            resent = [(b.seq, b.prev) for b in master.batches[2:]]
            assert resent == [(seqs[1], 0), (seqs[2], seqs[1])]
            await master.feedback.put(_feedback(agent="gw-new", consumed=seqs[2]))
            await _until(lambda: "anomaly" not in up.cloud_last)
            await master.feedback.put(None)  # a new stream: the cloud's chain is its own again
            await _until(lambda: master.streams == 2 and len(master.batches) == 6)
            assert (master.batches[4].seq, master.batches[4].prev) == (seqs[1], seqs[0])
        finally:
            task.cancel()
            await server.stop(0)
            up.close()

    asyncio.run(scenario())


def test_the_uplinks_own_backoff_is_short_and_capped() -> None:
    """Issue 20: a stream that fails past a ready link is tried again within 2 s at most, and
    gRPC's reconnect (20 % jitter on its cap) tries a dead link again within a second."""
    backoff = RETRY.start(random.Random(20))
    delays = [backoff.next_delay() for _ in range(200)]
    assert all(0 <= d <= 2.0 for d in delays) and RETRY.maximum == 2.0
    assert max(delays[-100:]) > 1.0  # it does grow to its cap, with full jitter
    backoff.reset()
    assert backoff.next_delay() <= RETRY.initial
    assert RECONNECT_MAX_MS * 1.2 <= 1000


def test_a_cut_link_is_waited_out_on_the_channel_and_the_backlog_follows(tmp_path: Path) -> None:
    """Issue 20: through a cut (master and data path alike, as an agent's whole link) the
    uplink waits for its channel to the master to be ready again, gRPC retrying the
    connection, instead of failing fast and growing its own backoff; when the link returns it
    opens a new stream and sends what it held and what was put meanwhile."""

    async def scenario() -> None:
        server, locator, ingress = await _cloud()
        proxy = LinkProxy(locator.address)
        up = Uplink(
            proxy.address,
            "gw",
            "iot",
            tmp_path / "outbox",
            1 << 20,
            StubStmgr(),  # type: ignore[arg-type]
            proxy=proxy.address,  # the data path goes through the same link
        )
        before, during = (1 << 20) | 1, (2 << 20) | 1
        up.put(7, "anomaly", before, b"before")
        task = asyncio.get_running_loop().create_task(up.run())
        try:
            await _until(lambda: up.connected and len(ingress.batches) == 1)
            proxy.cut()
            await _until(lambda: not up.connected)
            up.put(7, "anomaly", during, b"during")
            # the link stays down while gRPC tries it again and again (turned away each time)
            await _until(lambda: proxy.refused >= 5, timeout=30)
            # ... and the uplink's own backoff did not grow with them: at most the stream's
            # loss and a call or two that raced the cut counted
            assert up.backoff["anomaly"].failures <= 3
            assert ingress.streams == 1 and not up.connected
            proxy.restore()
            await _until(lambda: ingress.streams == 2 and len(ingress.batches) == 3, timeout=30)
            # not confirmed, so the new stream starts again after the last confirmed (none)
            assert [b.seq for b in ingress.batches] == [before, before, during]
            assert (up.connected, up.backoff["anomaly"].failures) == (True, 0)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
            proxy.close()
            await server.stop(0)
            up.close()

    asyncio.run(scenario())
