"""The uplink: an edge domain's one outbound stream to the cloud, fed from durable outboxes.

The edge stream manager owns one ``Outbox`` per boundary component. Outbox
sinks publish each complete edge checkpoint's output into it (a synced
write), and the uplink sends from it: one gRPC stream that the agent side
opens to the master (the cloud never dials an agent), batches up,
feedback down. At most ``WINDOW`` batches per outbox are unanswered at a
time; ``consumed`` feedback opens the window, ``confirmed`` (a complete
cloud checkpoint holds it) deletes from the outbox, ``resend_after`` rewinds.
A new stream starts again after the last confirmed batch; so does a stream
whose feedback stalls. The cloud drops the replays.

A resend asked after a number below the last confirmed one means the cloud
holds nothing of this agent's after it under this agent's id, yet confirmed
more (the agent's id changed: an agent upgraded from process-id ids, or
started with another ``--id``): everything up to the confirmed batch is in
the cloud, so the next batch names the cloud's number as the one before it
instead of resending for ever into a gap.

When the outboxes hold more than the byte budget, the stream manager
throttles the spouts that feed the outbox sinks (scoped backpressure), and
the agent stops acknowledging MQTT, so the broker holds what follows.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path

import grpc

from headwater.common._retry import RetryPolicy
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._outbox import Outbox

log = logging.getLogger("headwater.edge.uplink")
WINDOW = 8  # unanswered batches per outbox
STALL_S = 15.0  # no feedback for this long with batches out: resend from the last confirmed
STATUS_S = 2.0
LOW_WATER = 0.9  # backpressure lifts below this share of the budget


class Uplink:
    def __init__(
        self,
        address: str,
        agent: str,
        topology: str,
        outbox_dir: str | Path,
        budget_bytes: int,
        stmgr: StreamManager,
        backoff: RetryPolicy | None = None,
    ) -> None:
        self.address = address
        self.agent = agent
        self.topology = topology
        self.dir = Path(outbox_dir)
        self.budget = budget_bytes
        self.stmgr = stmgr
        self.backoff = backoff or RetryPolicy()
        self.outboxes: dict[str, Outbox] = {}
        for d in sorted(self.dir.glob("*")) if self.dir.exists() else []:
            if d.is_dir():
                self._outbox(d.name)
        self.cursor: dict[str, int] = {}  # last sequence number sent per outbox
        self.inflight: dict[str, deque[int]] = {}
        self.sink_task: dict[str, int] = {}
        # the cloud's last number from this agent, where it is below the last confirmed
        self.cloud_last: dict[str, int] = {}
        self.wake = asyncio.Event()
        self.connected = False
        self.last_feedback = time.monotonic()
        self.sent = self.confirmed_batches = self.resends = self.connects = 0
        self.chained = 0  # times the cloud held less than it had confirmed
        self.throttling = False
        self.rewinds = 0  # grows on every rewind: a send loop in progress starts over

    def _outbox(self, component: str) -> Outbox:
        box = self.outboxes.get(component)
        if box is None:
            box = self.outboxes[component] = Outbox(self.dir / component, self.budget)
        return box

    # -- from the stream manager ---------------------------------------------------
    def put(self, task: int, component: str, seq: int, rows: bytes) -> None:
        """An outbox sink published a batch: store it (synced) before anything else."""
        self.sink_task[component] = task
        if self._outbox(component).put(rows, seq):
            self.wake.set()
        self._check_budget()

    @property
    def nbytes(self) -> int:
        return sum(b.nbytes for b in self.outboxes.values())

    @property
    def backlog(self) -> int:
        return sum(b.backlog for b in self.outboxes.values())

    def _check_budget(self) -> None:
        used = self.nbytes
        if not self.throttling and used >= self.budget:
            self.throttling = True
            log.warning("outbox over its budget (%d of %d bytes): throttling edge sources",
                        used, self.budget)  # fmt: skip
            for component, task in self.sink_task.items():
                self.stmgr.congestion_on(f"outbox:{component}", task)
        elif self.throttling and used < self.budget * LOW_WATER:
            self.throttling = False
            log.info("outbox back under its budget: edge sources resume")
            for component in self.sink_task:
                self.stmgr.congestion_off(f"outbox:{component}")

    def metrics(self) -> list[tuple[str, str, float]]:
        scope = f"container:{self.stmgr.container}"
        return [
            (scope, "outbox_bytes", float(self.nbytes)),
            (scope, "outbox_batches", float(self.backlog)),
            (scope, "outbox_budget_bytes", float(self.budget)),
            (scope, "uplink_connected", 1.0 if self.connected else 0.0),
            (scope, "uplink_sent", float(self.sent)),
            (scope, "uplink_confirmed", float(self.confirmed_batches)),
            (scope, "uplink_resends", float(self.resends)),
            (scope, "uplink_chained", float(self.chained)),
        ]

    # -- the stream ------------------------------------------------------------------
    async def run(self) -> None:
        next_delay = self.backoff.start().next_delay
        while True:
            try:
                async with grpc.aio.insecure_channel(self.address, options=[
                    ("grpc.max_send_message_length", 64 << 20),
                    ("grpc.keepalive_time_ms", 5000),
                    ("grpc.keepalive_timeout_ms", 5000),
                    ("grpc.keepalive_permit_without_calls", 1),
                    ("grpc.http2.max_pings_without_data", 0),
                ]) as channel:  # fmt: skip
                    stub = pb_grpc.ClusterStub(channel)
                    self._rewind_all()
                    call = stub.Uplink(self._requests())
                    async for fb in call:
                        if not self.connected:
                            self.connected = True
                            self.connects += 1
                            log.info("uplink to %s up", self.address)
                            next_delay = self.backoff.start().next_delay
                        self._on_feedback(fb)
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                log.debug("uplink to %s down: %s", self.address, exc.code())
            if self.connected:
                log.warning("uplink to %s lost; backlog %d batches", self.address, self.backlog)
            self.connected = False
            await asyncio.sleep(next_delay())

    def _rewind_all(self) -> None:
        self.rewinds += 1
        for component, box in self.outboxes.items():
            self.cursor[component] = box.confirmed
            self.inflight[component] = deque()
        self.last_feedback = time.monotonic()

    async def _requests(self) -> AsyncIterator[pb.UplinkUp]:
        yield pb.UplinkUp(hello=pb.UplinkHello(agent=self.agent, topology=self.topology))
        next_status = 0.0
        while True:
            now = time.monotonic()
            if now >= next_status:
                next_status = now + STATUS_S
                metrics = {n: v for s, n, v in self.stmgr.metrics() if s.startswith("container")}
                yield pb.UplinkUp(status=pb.UplinkStatus(metrics=metrics))
            if any(self.inflight.values()) and now - self.last_feedback > STALL_S:
                log.warning("no feedback from the cloud for %.0fs: resending", STALL_S)
                self.resends += 1
                self._rewind_all()
            sent = False
            for component, box in list(self.outboxes.items()):
                inflight = self.inflight.setdefault(component, deque())
                cursor = self.cursor.setdefault(component, box.confirmed)
                if len(inflight) >= WINDOW:
                    continue
                rewinds = self.rewinds
                for seq, payload in box.pending(after=cursor):
                    prev = max(cursor, box.confirmed)
                    if prev == box.confirmed and component in self.cloud_last:
                        prev = self.cloud_last[component]
                    yield pb.UplinkUp(batch=pb.UplinkBatch(
                        agent=self.agent, component=component, seq=seq, prev=prev,
                        payload=payload,
                    ))  # fmt: skip
                    if self.rewinds != rewinds:
                        break  # rewound while this batch went out: start again from there
                    self.sent += 1
                    sent = True
                    inflight.append(seq)
                    self.cursor[component] = cursor = seq
                    if len(inflight) >= WINDOW:
                        break
            if not sent:
                self.wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.wake.wait(), timeout=0.5)

    def _on_feedback(self, fb: pb.UplinkFeedback) -> None:
        self.last_feedback = time.monotonic()
        box = self.outboxes.get(fb.component)
        if box is None:
            return
        inflight = self.inflight.setdefault(fb.component, deque())
        if fb.consumed:
            while inflight and inflight[0] <= fb.consumed:
                inflight.popleft()
        if fb.confirmed > box.confirmed:
            before = box.backlog
            box.confirm(fb.confirmed)
            self.confirmed_batches += before - box.backlog
            while inflight and inflight[0] <= fb.confirmed:
                inflight.popleft()
            self._check_budget()
        if fb.consumed:
            self.cloud_last.pop(fb.component, None)  # it took one: the chain is its own again
        if 0 <= fb.resend_after < box.confirmed:
            if self.cloud_last.get(fb.component) != fb.resend_after:
                # the batches between were confirmed, so deleted here: if the cloud does not
                # hold them (it fell back past a corrupt checkpoint) they are missing there
                self.chained += 1
                log.error("the cloud has %s's batches of %r up to %d, but confirmed up to %d: "
                          "going on after %d (was this agent's id changed? if not, the cloud "
                          "lost batches it had confirmed)", self.agent, fb.component,
                          fb.resend_after, box.confirmed, box.confirmed)  # fmt: skip
            self.cloud_last[fb.component] = fb.resend_after
        if fb.resend_after >= 0:
            self.resends += 1
            self.rewinds += 1
            self.cursor[fb.component] = max(fb.resend_after, box.confirmed)
            inflight.clear()
        self.wake.set()

    def close(self) -> None:
        for box in self.outboxes.values():
            box.close()
