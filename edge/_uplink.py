"""The uplink: an edge domain's outbound streams to the cloud, fed from durable outboxes.

The edge stream manager owns one ``Outbox`` per boundary component. Outbox
sinks publish each complete edge checkpoint's output into it (a synced
write), and the uplink sends from it. For each boundary component the agent
side asks the master where that component's cloud receiver runs (control
only: ``Cluster.LocateReceiver``) and dials that container's stream manager
(its ``Ingress``: the data plane, never the master), through the site's
HTTP CONNECT proxy if one is given; the cloud never dials an agent. Batches
go up, feedback comes down the same stream. At most ``WINDOW`` batches per
outbox are unanswered at a time; ``consumed`` feedback opens the window,
``confirmed`` (a complete cloud checkpoint holds it) deletes from the
outbox, ``resend_after`` rewinds. A new stream (the receiver's container
restarted or moved: the agent asks the master again) starts again after the
last confirmed batch; so does a stream whose feedback stalls. The cloud
drops the replays.

A resend asked after a number below the last confirmed one means the cloud
holds nothing of this agent's after it under this agent's id, yet confirmed
more (the agent's id changed: an agent upgraded from process-id ids, or
started with another ``--id``): everything up to the confirmed batch is in
the cloud, so the next batch names the cloud's number as the one before it
instead of resending for ever into a gap.

A link that goes down is waited out on the channel to the master, not in the
uplink's own backoff: gRPC retries the connection (its reconnect backoff capped
at ``RECONNECT_MAX_MS``, so about once a second on a dead link) and the uplink
goes on as soon as the channel is ready again, within a second of the link's
return. Only failures past a ready link (the master answered, the receiver
could not be reached or refused) grow the uplink's backoff (``RETRY``: up to
2 s, full jitter).

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
from collections.abc import AsyncIterator, Iterable
from pathlib import Path

import grpc

from headwater.common._retry import Backoff, RetryPolicy
from headwater.common.node._leader import MasterAddresses
from headwater.common.runtime._stmgr import StreamManager
from headwater.common.security import MASTER_NAME, WORKER_NAME, Transport
from headwater.common.wire.proto import runtime_pb2 as pb
from headwater.common.wire.proto import runtime_pb2_grpc as pb_grpc

from ._locate import Locator
from ._outbox import Outbox

log = logging.getLogger("headwater.edge.uplink")
WINDOW = 8  # unanswered batches per outbox
STALL_S = 15.0  # no feedback for this long with batches out: resend from the last confirmed
LOW_WATER = 0.9  # backpressure lifts below this share of the budget
RETRY = RetryPolicy(initial=0.1, maximum=2.0)
"""Trying a stream again after the master answered but the stream failed: 0.1 s to 2 s."""
RECONNECT_MAX_MS = 800
"""gRPC's reconnect backoff on the uplink's channels (its default grows to 120 s): with its
20 % jitter a link that returns is reconnected to within a second, and a dead one is tried
about once a second."""
_RECONNECT_OPTIONS = [
    ("grpc.initial_reconnect_backoff_ms", 100),
    ("grpc.max_reconnect_backoff_ms", RECONNECT_MAX_MS),
]
_STREAM_OPTIONS = [
    *_RECONNECT_OPTIONS,
    ("grpc.max_send_message_length", 64 << 20),
    ("grpc.keepalive_time_ms", 5000),
    ("grpc.keepalive_timeout_ms", 5000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
]


def cloud_channel(address: str, transport: Transport, proxy: str = "") -> grpc.aio.Channel:
    """A channel to a worker's stream manager, through the HTTP CONNECT ``proxy`` (HOST:PORT)
    if given: mutual TLS with the agent's certificate, to a server that must be a worker's."""
    options = [*_STREAM_OPTIONS, *([("grpc.http_proxy", f"http://{proxy}")] if proxy else [])]
    return transport.channel(address, to=WORKER_NAME, options=options)


class Uplink:
    def __init__(
        self,
        master: str,
        agent: str,
        topology: str,
        outbox_dir: str | Path,
        budget_bytes: int,
        stmgr: StreamManager,
        retry: RetryPolicy | None = None,
        components: Iterable[str] = (),
        proxy: str = "",
    ) -> None:
        self.master = master
        self.proxy = proxy
        self.agent = agent
        self.topology = topology
        self.dir = Path(outbox_dir)
        self.budget = budget_bytes
        self.stmgr = stmgr
        self.transport = stmgr.transport  # the agent's certificate, as its container has it
        self.retry = retry or RETRY
        self.backoff: dict[str, Backoff] = {}  # per component, while its link task runs
        self.outboxes: dict[str, Outbox] = {}
        for d in sorted(self.dir.glob("*")) if self.dir.exists() else []:
            if d.is_dir():
                self._outbox(d.name)
        # the boundary components: one stream each, open even while their outbox is empty
        self.wanted: set[str] = set(components) | set(self.outboxes)
        self.cursor: dict[str, int] = {}  # last sequence number sent per outbox
        self.inflight: dict[str, deque[int]] = {}
        self.sink_task: dict[str, int] = {}
        # the cloud's last number from this agent, where it is below the last confirmed
        self.cloud_last: dict[str, int] = {}
        self.wake: dict[str, asyncio.Event] = {}
        self.links_changed = asyncio.Event()
        self.open: dict[str, str] = {}  # component -> the ingress its stream is open to
        self.last_feedback: dict[str, float] = {}
        self.sent = self.confirmed_batches = self.resends = self.connects = 0
        self.sent_bytes = 0  # the batches' payloads sent (resends too): what the uplink costs
        self.chained = 0  # times the cloud held less than it had confirmed
        self.throttling = False
        self.rewinds: dict[str, int] = {}  # grows on every rewind: a send loop starts over

    def _outbox(self, component: str) -> Outbox:
        box = self.outboxes.get(component)
        if box is None:
            box = self.outboxes[component] = Outbox(self.dir / component, self.budget)
        return box

    def _wake(self, component: str) -> asyncio.Event:
        return self.wake.setdefault(component, asyncio.Event())

    @property
    def connected(self) -> bool:
        """Every boundary component's stream is open."""
        return all(c in self.open for c in self.wanted)

    # -- from the stream manager ---------------------------------------------------
    def put(self, task: int, component: str, seq: int, rows: bytes) -> None:
        """An outbox sink published a batch: store it (synced) before anything else."""
        self.sink_task[component] = task
        if self._outbox(component).put(rows, seq):
            self._wake(component).set()
        if component not in self.wanted:  # a boundary component added by a live edit
            self.wanted.add(component)
            self.links_changed.set()
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
            log.warning(
                "outbox over its budget (%d of %d bytes): throttling edge sources",
                used,
                self.budget,
            )
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
            (scope, "uplink_streams", float(len(self.open))),
            (scope, "uplink_sent", float(self.sent)),
            (scope, "uplink_sent_bytes", float(self.sent_bytes)),
            (scope, "uplink_confirmed", float(self.confirmed_batches)),
            (scope, "uplink_resends", float(self.resends)),
            (scope, "uplink_chained", float(self.chained)),
        ]

    # -- the streams ---------------------------------------------------------------
    async def run(self) -> None:
        """One stream per boundary component, for as long as the container runs."""
        links: dict[str, asyncio.Task[None]] = {}
        loop = asyncio.get_running_loop()
        async with contextlib.AsyncExitStack() as masters:
            channels = [
                await masters.enter_async_context(
                    self.transport.channel(address, to=MASTER_NAME, options=_RECONNECT_OPTIONS)
                )
                for address in MasterAddresses(self.master).all
            ]
            locator = Locator(channels, self.topology)
            try:
                while True:
                    for component in sorted(self.wanted - set(links)):
                        links[component] = loop.create_task(self._link(locator, component))
                    self.links_changed.clear()
                    await self.links_changed.wait()
            finally:
                for task in links.values():
                    task.cancel()
                await asyncio.gather(*links.values(), return_exceptions=True)

    async def _link(self, locator: Locator, component: str) -> None:
        """Ask the master where ``component``'s receiver runs, stream to it; again when it ends.

        While the link to the master is down this waits for its channel to be ready again
        (gRPC reconnecting, ``RECONNECT_MAX_MS`` apart at most, give or take its jitter)
        instead of failing fast and backing off, so the uplink's backoff does not grow
        through a cut (``Locator``)."""
        backoff = self.backoff[component] = self.retry.start()
        while True:
            address = ""
            try:
                address = await locator.locate(component)
                async with cloud_channel(address, self.transport, self.proxy) as channel:
                    self._rewind(component)
                    call = pb_grpc.IngressStub(channel).Uplink(self._requests(component))
                    async for fb in call:
                        if component not in self.open:
                            self.open[component] = address
                            self.connects += 1
                            log.info("uplink of %r to %s up", component, address)
                            backoff.reset()
                        self._on_feedback(fb)
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                log.debug(
                    "uplink of %r (receiver at %s) down: %s %s",
                    component,
                    address or "?",
                    exc.code(),
                    exc.details(),
                )
            except Exception:  # a bug, or an address gRPC refuses: say so, never stop trying
                log.exception("uplink of %r (receiver at %s) failed", component, address or "?")
            if self.open.pop(component, None) is not None:
                log.warning(
                    "uplink of %r to %s lost; backlog %d batches", component, address, self.backlog
                )
            await asyncio.sleep(backoff.next_delay())

    def _rewind(self, component: str) -> None:
        self.rewinds[component] = self.rewinds.get(component, 0) + 1
        box = self.outboxes.get(component)
        self.cursor[component] = box.confirmed if box is not None else 0
        self.inflight[component] = deque()
        self.last_feedback[component] = time.monotonic()

    async def _requests(self, component: str) -> AsyncIterator[pb.UplinkUp]:
        yield pb.UplinkUp(
            hello=pb.UplinkHello(agent=self.agent, topology=self.topology, component=component)
        )
        wake = self._wake(component)
        while True:
            now = time.monotonic()
            inflight = self.inflight.setdefault(component, deque())
            if inflight and now - self.last_feedback.get(component, now) > STALL_S:
                log.warning("no feedback from the cloud for %.0fs: resending", STALL_S)
                self.resends += 1
                self._rewind(component)
                inflight = self.inflight[component]
            sent = False
            box = self.outboxes.get(component)
            if box is not None and len(inflight) < WINDOW:
                cursor = self.cursor.setdefault(component, box.confirmed)
                rewinds = self.rewinds.get(component, 0)
                for seq, payload in box.pending(after=cursor):
                    prev = max(cursor, box.confirmed)
                    if prev == box.confirmed and component in self.cloud_last:
                        prev = self.cloud_last[component]
                    yield pb.UplinkUp(
                        batch=pb.UplinkBatch(
                            agent=self.agent,
                            component=component,
                            seq=seq,
                            prev=prev,
                            payload=payload,
                        )
                    )
                    if self.rewinds.get(component, 0) != rewinds:
                        break  # rewound while this batch went out: start again from there
                    self.sent += 1
                    self.sent_bytes += len(payload)
                    sent = True
                    inflight.append(seq)
                    self.cursor[component] = cursor = seq
                    if len(inflight) >= WINDOW:
                        break
            if not sent:
                wake.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(0.5):
                        await wake.wait()

    def _on_feedback(self, fb: pb.UplinkFeedback) -> None:
        self.last_feedback[fb.component] = time.monotonic()
        box = self.outboxes.get(fb.component)
        if box is None:
            return
        inflight = self.inflight.setdefault(fb.component, deque())
        if fb.consumed:
            while inflight and inflight[0] <= fb.consumed:
                inflight.popleft()
        if fb.confirmed >= box.next_seq:  # confirms what was never written: not a receiver's
            log.error(
                "feedback for %r confirms batch %d, but only %d were written: ignored",
                fb.component,
                fb.confirmed,
                box.next_seq - 1,
            )
            return
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
                log.error(
                    "the cloud has %s's batches of %r up to %d, but confirmed up to %d: "
                    "going on after %d (was this agent's id changed? if not, the cloud "
                    "lost batches it had confirmed)",
                    self.agent,
                    fb.component,
                    fb.resend_after,
                    box.confirmed,
                    box.confirmed,
                )
            self.cloud_last[fb.component] = fb.resend_after
        if fb.resend_after >= 0:
            self.resends += 1
            self.rewinds[fb.component] = self.rewinds.get(fb.component, 0) + 1
            self.cursor[fb.component] = max(fb.resend_after, box.confirmed)
            inflight.clear()
        self._wake(fb.component).set()

    def close(self) -> None:
        for box in self.outboxes.values():
            box.close()
