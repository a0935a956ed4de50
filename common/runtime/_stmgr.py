"""The stream manager: routes batches between local instances and peer stmgrs.

One per container, on an asyncio loop. Local instances connect over a Unix
socket; peer stmgrs over gRPC streams (each stmgr dials every peer once and
sends on that stream). A frame is routed by its header (kind, dest task);
payloads are never decoded here, except ack bookkeeping, which this stmgr
keeps for its own spouts (see ``_acking``).

Backpressure is scoped, not global as in Heron: when the buffer towards a
local task (or a peer) passes the high water mark, this stmgr names the
spouts whose tuples can reach that task and tells every stmgr to stop
reading from those spouts; below the low water mark it lifts the throttle.
Spouts on paths that do not reach the congested task keep running.
"""

from __future__ import annotations

import asyncio
import logging
import struct
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc

from ..api import RuntimeConfig, Topology
from ..plan import PhysicalPlan, upstream_spouts
from ..wire import FrameReader, Kind, decode, encode, encode_frame, parse_frame
from ..wire._frame import STMGR, frame_dest, length_prefix
from ..wire.proto import runtime_pb2 as pb
from ..wire.proto import runtime_pb2_grpc as pb_grpc
from ._acking import XorTracker
from ._ingress import Ingress

_SEQ = struct.Struct("<q")  # an outbox frame's sequence number (see _outbox_sink.py)
log = logging.getLogger("headwater.stmgr")
BpKey = str


class InstanceConnection(asyncio.Protocol):
    """One local instance's Unix-socket connection."""

    def __init__(self, stmgr: StreamManager) -> None:
        self.stmgr = stmgr
        self.reader = FrameReader()
        self.transport: asyncio.Transport | None = None
        self.task: int | None = None
        self.pid: int | None = None
        self.paused_reading = False
        self.stale = False
        self.heard = time.monotonic()  # the last bytes from the instance (it beats every 1 s)

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        rc = self.stmgr.rc
        transport.set_write_buffer_limits(high=rc.stmgr_high_water, low=rc.stmgr_low_water)

    def data_received(self, data: bytes) -> None:
        stmgr = self.stmgr
        if self.stale:
            return  # an instance of a rolled-back epoch, about to be killed
        self.heard = time.monotonic()
        stmgr.bytes_in += len(data)
        for frame in self.reader.feed(data):
            stmgr.on_local_frame(self, frame)

    def write(self, frame: bytes) -> None:
        assert self.transport is not None
        self.transport.write(length_prefix(frame) + frame)
        self.stmgr.bytes_out += len(frame) + 4

    def pause_writing(self) -> None:
        if self.task is not None:
            self.stmgr.congestion_on(f"task:{self.task}", self.task)

    def resume_writing(self) -> None:
        if self.task is not None:
            self.stmgr.congestion_off(f"task:{self.task}")

    def set_reading(self, on: bool) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        if on and self.paused_reading:
            self.transport.resume_reading()
            self.heard = time.monotonic()  # not read while paused: silence is not its own
        elif not on and not self.paused_reading:
            self.transport.pause_reading()
        self.paused_reading = not on

    def connection_lost(self, exc: Exception | None) -> None:
        self.stmgr.on_instance_lost(self)


class PeerLink:
    """The outbound gRPC stream to one peer stmgr, with a send queue."""

    def __init__(self, stmgr: StreamManager, container: int, address: str) -> None:
        self.stmgr = stmgr
        self.container = container
        self.address = address
        self.queue: deque[bytes] = deque()
        # control frames overtake data but keep their own order: a backpressure
        # "off" must never overtake the "on" it answers
        self.control: deque[bytes] = deque()
        self.nbytes = 0
        self._ready = asyncio.Event()
        self.connected = False
        self.task = asyncio.get_running_loop().create_task(self._run())

    def send(self, frame: bytes) -> None:
        self.queue.append(frame)
        self.nbytes += len(frame)
        self._ready.set()
        if self.nbytes >= self.stmgr.rc.stmgr_high_water:
            self.stmgr.congestion_on(f"peer:{self.container}", None, self.container)

    def send_control(self, frame: bytes) -> None:
        self.control.append(frame)
        self._ready.set()

    async def _frames(self) -> AsyncIterator[pb.Frames]:
        # a new stream starts with the whole backpressure state, which supersedes
        # any control frame queued for the broken one
        self.control.clear()
        yield pb.Frames(frames=self.stmgr.hello_frames(), epoch=self.stmgr.epoch)
        while True:
            if not self.queue and not self.control:
                self._ready.clear()
                await self._ready.wait()
            batch: list[bytes] = list(self.control)
            self.control.clear()
            size = 0
            while self.queue and size < (4 << 20):
                f = self.queue.popleft()
                batch.append(f)
                size += len(f)
            self.nbytes -= size
            self.stmgr.frames_out += len(batch)
            self.stmgr.bytes_out += size
            if self.nbytes <= self.stmgr.rc.stmgr_low_water:
                self.stmgr.congestion_off(f"peer:{self.container}")
            yield pb.Frames(frames=batch, epoch=self.stmgr.epoch)

    async def _run(self) -> None:
        delay = 0.05
        while True:
            try:
                async with grpc.aio.insecure_channel(
                    self.address,
                    options=[
                        ("grpc.max_send_message_length", 64 << 20),
                        ("grpc.max_receive_message_length", 64 << 20),
                    ],
                ) as channel:
                    stub = pb_grpc.StreamManagerStub(channel)
                    call = stub.Exchange(self._frames())
                    self.connected = True
                    delay = 0.05
                    async for _ in call:
                        pass
            except asyncio.CancelledError:
                raise
            except grpc.RpcError as exc:
                if self.connected:
                    log.warning("link to container %d (%s) broke: %s", self.container,
                                self.address, exc.code())  # fmt: skip
            self.connected = False
            await asyncio.sleep(delay)
            delay = min(delay * 2, 2.0)

    def close(self) -> None:
        self.task.cancel()


class _PeerServicer(pb_grpc.StreamManagerServicer):
    def __init__(self, stmgr: StreamManager) -> None:
        self.stmgr = stmgr

    async def Exchange(
        self, request_iterator: AsyncIterator[pb.Frames], context: Any
    ) -> AsyncIterator[pb.Frames]:
        stmgr = self.stmgr
        async for msg in request_iterator:
            if msg.epoch != stmgr.epoch:
                continue  # sent before a rollback: that timeline is gone
            frames = msg.frames
            stmgr.frames_in += len(frames)
            for frame in frames:
                stmgr.bytes_in += len(frame)
                stmgr.route(frame)
        return
        yield  # type: ignore[unreachable]  # an async generator that never answers


class StreamManager:
    """Routing, acking, backpressure and metrics for one container."""

    def __init__(
        self,
        topology: Topology,
        plan: PhysicalPlan,
        container: int,
        on_exception: Callable[[dict[str, Any]], None] = lambda report: None,
    ) -> None:
        self.topology = topology
        self.plan = plan
        self.container = container
        self.rc = RuntimeConfig.from_mapping(topology.config)
        self.on_exception = on_exception
        # set by the container: a snapshot arrived; an instance said hello
        self.on_state: Callable[[int, int, bytes], None] = lambda task, ckpt, blob: None
        self.on_hello: Callable[[int], None] = lambda task: None
        # edge: an outbox sink published (component, sequence, rows); runtime
        # components' control messages; extra metrics
        self.on_outbox: Callable[[int, str, int, bytes], None] | None = None
        self.on_system: Callable[[dict[str, Any]], None] = lambda msg: None
        self.extra_metrics: Callable[[], list[tuple[str, str, float]]] = list
        self.epoch = 0
        # live edits: task -> (switch checkpoint, sources whose marker has passed); what
        # such a source sends after its marker waits for the task's successor
        self.retiring: dict[int, tuple[int, set[int]]] = {}
        self.conns: dict[int, InstanceConnection] = {}
        self.waiting: dict[int, list[bytes]] = {}  # frames for tasks not connected yet
        self.waiting_bytes: dict[int, int] = {}
        self.set_plan(topology, plan)
        self.peers: dict[int, PeerLink] = {}
        self.peer_addresses: dict[int, str] = {}
        self.tracker = XorTracker(self.rc.message_timeout_s)
        self._acked: dict[int, list[int]] = {}
        self._failed: dict[int, list[int]] = {}
        self._flush_scheduled = False
        # backpressure: key -> spouts throttled; local keys are the ones we started
        self.local_congestion: dict[BpKey, frozenset[str]] = {}
        self.bp_sources: dict[BpKey, frozenset[str]] = {}
        self.throttled: frozenset[str] = frozenset()
        self._bp_since: float | None = None
        self._throttled_since: float | None = None
        self.bp_time_s = 0.0
        self.throttled_time_s = 0.0
        self.active = False
        # metrics
        self.bytes_in = self.bytes_out = self.frames_in = self.frames_out = 0
        self.task_metrics: dict[int, dict[str, Any]] = {}
        self.task_base: dict[int, dict[str, Any]] = {}
        self.restarts: dict[int, int] = {}
        self.exceptions: dict[int, int] = {}
        self.ingress = Ingress(self)  # agents' uplinks, to the receivers here

    # -- plans ------------------------------------------------------------------
    def set_plan(self, topology: Topology, plan: PhysicalPlan) -> None:
        """Route by ``plan`` (a first plan, a revision taking over, or a rollback)."""
        self.topology, self.plan = topology, plan
        self.local_tasks = {i.task_id for i in plan.in_container(self.container)}
        self.task_container = {i.task_id: i.container for i in plan.instances}
        self.task_component = {i.task_id: i.component for i in plan.instances}
        self.spout_components = {c.name for c in topology.components if c.kind == "spout"}
        self._upstream = upstream_spouts(topology)
        for task in list(self.waiting):
            if task >= 0 and task not in self.local_tasks:
                del self.waiting[task]  # a removed task: nothing after its barrier is its
                self.waiting_bytes.pop(task, None)

    def stage(self, plan: PhysicalPlan, retiring: set[int], at: int) -> None:
        """Get ready for a switch at checkpoint ``at``: know the new tasks, hold the old ones."""
        for i in plan.instances:
            self.task_container.setdefault(i.task_id, i.container)
            self.task_component.setdefault(i.task_id, i.component)
            if i.container == self.container:
                self.local_tasks.add(i.task_id)
        self.retiring = {task: (at, set()) for task in retiring}

    # -- routing ----------------------------------------------------------------
    def route(self, frame: bytes) -> None:
        kind = frame[0]
        if kind == Kind.DATA or kind == Kind.DATA_ROOTED or kind == Kind.MARKER:
            dest = frame_dest(frame)
            if dest in self.local_tasks:
                self.deliver(dest, frame)
            else:
                self._to_peer(dest, frame)
        elif kind == Kind.ACK or kind == Kind.FAIL:
            dest = frame_dest(frame)
            if dest in self.local_tasks:
                self._apply_acks(kind, dest, frame)
            else:
                self._to_peer(dest, frame)
        elif kind == Kind.CONTROL:
            self._on_peer_control(decode(_payload(frame)))
        else:
            log.warning("dropping unexpected frame kind %d from a peer", kind)

    def on_local_frame(self, conn: InstanceConnection, frame: bytes) -> None:
        self.frames_in += 1
        kind = frame[0]
        if kind <= Kind.FAIL or kind == Kind.MARKER:  # data, rooted data, acks, fails
            self.route(frame)
        elif kind == Kind.STATE:
            self.on_state(_src(frame), _count(frame), bytes(_payload(frame)))
        elif kind == Kind.ROOTS:
            task = _src(frame)
            flat = decode(_payload(frame))
            add = self.tracker.add
            for i in range(0, len(flat), 2):
                add(task, flat[i], flat[i + 1])
        elif kind == Kind.METRICS:
            m = decode(_payload(frame))
            self.task_metrics[m["task"]] = m
        elif kind == Kind.CONTROL:
            msg = decode(_payload(frame))
            if msg.get("type") == "hello":
                self.on_instance_hello(conn, int(msg["task"]), int(msg["pid"]))
            elif msg.get("type") == "alive":
                pass  # the gateway's heartbeat: data_received noted it
            elif msg.get("type") == "exception":
                self.exceptions[msg["task"]] = self.exceptions.get(msg["task"], 0) + 1
                self.on_exception(msg)
            elif msg.get("type") == "dead_letter":  # counted by the instance (dead_letters)
                self.on_exception(msg)
            elif msg.get("type") == "uplink_feedback":  # a receiver's, to its agents' streams
                self.ingress.feedback(msg)
            else:
                self.on_system(msg)
        elif kind == Kind.OUTBOX:
            if self.on_outbox is None:
                log.warning("dropping an outbox frame: this container has no uplink")
                return
            f = parse_frame(frame)
            self.on_outbox(f.src, f.stream, _SEQ.unpack_from(f.payload)[0],
                           bytes(f.payload[_SEQ.size :]))  # fmt: skip

    def deliver(self, task: int, frame: bytes) -> None:
        if self.retiring and task in self.retiring and self._hold(task, frame):
            return
        conn = self.conns.get(task)
        if conn is not None:
            conn.write(frame)
            self.frames_out += 1
            return
        self.waiting.setdefault(task, []).append(frame)
        size = self.waiting_bytes[task] = self.waiting_bytes.get(task, 0) + len(frame)
        if size >= self.rc.stmgr_high_water:
            self.congestion_on(f"task:{task}", task)

    def _hold(self, task: int, frame: bytes) -> bool:
        """True when ``frame`` comes after the switch barrier: keep it for the successor."""
        at, passed = self.retiring[task]
        src = _src(frame)
        if src in passed:
            self.waiting.setdefault(task, []).append(frame)
            self.waiting_bytes[task] = self.waiting_bytes.get(task, 0) + len(frame)
            return True
        if frame[0] == Kind.MARKER and _count(frame) == at:
            passed.add(src)
        return False

    def retire(self, task: int) -> None:
        """The old instance of ``task`` is gone: frames wait for its successor (if any)."""
        self.retiring.pop(task, None)
        conn = self.conns.pop(task, None)
        if conn is not None:
            conn.stale = True
            self._fold_metrics(task)

    def _to_peer(self, dest: int, frame: bytes) -> None:
        container = self.task_container.get(dest)
        if container is None:
            log.warning("dropping frame for unknown task %d", dest)
            return
        link = self.peers.get(container)
        if link is None:
            # plan not complete yet: park the frame until the peer is known
            self.waiting.setdefault(-1000 - container, []).append(frame)
            return
        link.send(frame)

    # -- acking -----------------------------------------------------------------
    def _apply_acks(self, kind: int, spout_task: int, frame: bytes) -> None:
        flat = decode(_payload(frame))
        if kind == Kind.ACK:
            ack = self.tracker.ack
            done = [
                flat[i] for i in range(0, len(flat), 2) if ack(spout_task, flat[i], flat[i + 1])
            ]
            if done:
                self._acked.setdefault(spout_task, []).extend(done)
        else:
            fail = self.tracker.fail
            done = [root for root in flat if fail(spout_task, root)]
            if done:
                self._failed.setdefault(spout_task, []).extend(done)
        if done and not self._flush_scheduled:
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(self._flush_acks)

    def _flush_acks(self) -> None:
        self._flush_scheduled = False
        for kind, pending in ((Kind.ACKED, self._acked), (Kind.FAILED, self._failed)):
            for task, roots in pending.items():
                if task in self.conns:
                    self.deliver(
                        task, encode_frame(kind, task, STMGR, len(roots), b"", encode(roots))
                    )
            pending.clear()

    def expire_roots(self) -> None:
        for task, root in self.tracker.expire():
            self._failed.setdefault(task, []).append(root)
        if self._failed:
            self._flush_acks()

    # -- instances --------------------------------------------------------------
    def on_instance_hello(self, conn: InstanceConnection, task: int, pid: int) -> None:
        if task not in self.local_tasks:
            log.error("instance for task %d connected to the wrong container", task)
            if conn.transport:
                conn.transport.close()
            return
        conn.task, conn.pid = task, pid
        self.conns[task] = conn
        for frame in self.waiting.pop(task, []):
            conn.write(frame)
        self.waiting_bytes.pop(task, None)
        self.congestion_off(f"task:{task}")
        if self.task_component[task] in self.spout_components:
            conn.set_reading(self.task_component[task] not in self.throttled)
            if self.active:
                self.send_control(task, {"type": "activate"})
        log.info("task %d (%s) connected, pid %d", task, self.task_component[task], pid)
        self.on_hello(task)

    def on_instance_lost(self, conn: InstanceConnection) -> None:
        task = conn.task
        if task is None or self.conns.get(task) is not conn:
            return
        del self.conns[task]
        self.congestion_off(f"task:{task}")
        self._fold_metrics(task)
        if self.task_component[task] in self.spout_components:
            self.tracker.forget_task(task)

    def _fold_metrics(self, task: int) -> None:
        """Add a dead incarnation's counters to the task's totals, so they never go back."""
        last = self.task_metrics.pop(task, None)
        if last:
            base = self.task_base.setdefault(task, {})
            for k, v in last.items():
                if k in _CUMULATIVE:
                    base[k] = base.get(k, 0) + v
            user = base.setdefault("user", {})
            for k, v in (last.get("user") or {}).items():
                user[k] = user.get(k, 0) + v

    def reset(self, epoch: int) -> None:
        """Roll back: forget every frame, root and connection of the previous epoch."""
        self.epoch = epoch
        self.active = False
        self.retiring = {}
        for task, conn in self.conns.items():
            conn.stale = True
            self._fold_metrics(task)
        self.conns.clear()
        self.waiting.clear()
        self.waiting_bytes.clear()
        for link in self.peers.values():
            link.queue.clear()
            link.nbytes = 0
        self.tracker = XorTracker(self.rc.message_timeout_s)
        self._acked.clear()
        self._failed.clear()
        for key in list(self.local_congestion):
            self.congestion_off(key)

    def send_control(self, task: int, msg: dict[str, Any]) -> None:
        conn = self.conns.get(task)
        if conn is not None:
            conn.write(encode_frame(Kind.CONTROL, task, STMGR, 0, b"", encode(msg)))

    def set_active(self, active: bool) -> None:
        if active == self.active:
            return
        self.active = active
        for task in self.conns:
            if self.task_component[task] in self.spout_components:
                self.send_control(task, {"type": "activate" if active else "deactivate"})

    # -- peers ------------------------------------------------------------------
    def set_peers(self, addresses: dict[int, str]) -> None:
        for container, address in addresses.items():
            if container == self.container:
                continue
            link = self.peers.get(container)
            if link is not None and link.address == address:
                continue
            if link is not None:
                link.close()
            self.peers[container] = link = PeerLink(self, container, address)
            for frame in self.waiting.pop(-1000 - container, []):
                link.send(frame)
        self.peer_addresses = dict(addresses)

    def hello_frames(self) -> list[bytes]:
        """Sent first on every new peer stream: forget our old requests, here are the live ones."""
        reset = encode_frame(Kind.CONTROL, STMGR, STMGR, 0, b"",
                             encode({"type": "bp_reset", "origin": self.container}))  # fmt: skip
        return [reset] + [
            encode_frame(
                Kind.CONTROL,
                STMGR,
                STMGR,
                0,
                b"",
                encode(
                    {
                        "type": "bp",
                        "on": True,
                        "key": f"{self.container}/{key}",
                        "spouts": sorted(spouts),
                    }
                ),
            )
            for key, spouts in self.local_congestion.items()
        ]

    def _on_peer_control(self, msg: dict[str, Any]) -> None:
        if msg.get("type") == "bp":
            key = msg["key"]
            if msg["on"]:
                self.bp_sources[key] = frozenset(msg["spouts"])
            else:
                self.bp_sources.pop(key, None)
            self._rethrottle()
        elif msg.get("type") == "bp_reset":
            prefix = f"{msg['origin']}/"
            for key in [k for k in self.bp_sources if k.startswith(prefix)]:
                del self.bp_sources[key]
            self._rethrottle()

    # -- backpressure -----------------------------------------------------------
    def congestion_on(self, key: str, task: int | None, container: int | None = None) -> None:
        if key in self.local_congestion:
            return
        if task is not None:
            spouts = self._upstream[self.task_component[task]]
            if self.task_component[task] in self.spout_components:
                return  # a spout's inbox holds acks only: bounded by max pending
        else:
            spouts = frozenset().union(
                *(
                    self._upstream[self.task_component[t]]
                    for t, c in self.task_container.items()
                    if c == container
                )
            )
        self.local_congestion[key] = spouts
        if self._bp_since is None:
            self._bp_since = time.monotonic()
        log.debug("backpressure on %s: throttling %s", key, sorted(spouts))
        self._broadcast_bp(key, True, spouts)
        self.bp_sources[f"{self.container}/{key}"] = spouts
        self._rethrottle()

    def congestion_off(self, key: str) -> None:
        spouts = self.local_congestion.pop(key, None)
        if spouts is None:
            return
        if not self.local_congestion and self._bp_since is not None:
            self.bp_time_s += time.monotonic() - self._bp_since
            self._bp_since = None
        self._broadcast_bp(key, False, spouts)
        self.bp_sources.pop(f"{self.container}/{key}", None)
        self._rethrottle()

    def _broadcast_bp(self, key: str, on: bool, spouts: frozenset[str]) -> None:
        frame = encode_frame(
            Kind.CONTROL,
            STMGR,
            STMGR,
            0,
            b"",
            encode(
                {"type": "bp", "on": on, "key": f"{self.container}/{key}", "spouts": sorted(spouts)}
            ),
        )
        for link in self.peers.values():
            link.send_control(frame)  # ahead of data: a congested link must still carry it

    def _rethrottle(self) -> None:
        throttled = frozenset().union(*self.bp_sources.values()) if self.bp_sources else frozenset()
        if throttled == self.throttled:
            return
        now = time.monotonic()
        if throttled and self._throttled_since is None:
            self._throttled_since = now
        elif not throttled and self._throttled_since is not None:
            self.throttled_time_s += now - self._throttled_since
            self._throttled_since = None
        self.throttled = throttled
        for task, conn in self.conns.items():
            comp = self.task_component[task]
            if comp in self.spout_components:
                conn.set_reading(comp not in throttled)

    def silent(self, limit_s: float) -> dict[int, float]:
        """Connected tasks not heard from for over ``limit_s`` (while read) -> seconds."""
        now = time.monotonic()
        return {task: now - c.heard for task, c in self.conns.items()
                if not c.paused_reading and not c.stale and now - c.heard > limit_s}  # fmt: skip

    # -- metrics ----------------------------------------------------------------
    def metrics(self) -> list[tuple[str, str, float]]:
        now = time.monotonic()
        bp = self.bp_time_s + (now - self._bp_since if self._bp_since is not None else 0.0)
        thr = self.throttled_time_s + (
            now - self._throttled_since if self._throttled_since is not None else 0.0
        )
        scope = f"container:{self.container}"
        out = [
            (scope, "bytes_in", float(self.bytes_in)),
            (scope, "bytes_out", float(self.bytes_out)),
            (scope, "batches_in", float(self.frames_in)),
            (scope, "batches_out", float(self.frames_out)),
            (scope, "buffer_bytes", float(self.buffered_bytes())),
            (scope, "backpressure_ms", bp * 1000.0),
            (scope, "throttled_ms", thr * 1000.0),
            (scope, "pending_trees", float(len(self.tracker))),
        ]
        for task in sorted(self.local_tasks):
            ts = f"task:{task}"
            m = self.task_metrics.get(task, {})
            base = self.task_base.get(task, {})
            for k in _CUMULATIVE:
                out.append((ts, k, float(m.get(k, 0)) + base.get(k, 0)))
            for k in _GAUGES:
                out.append((ts, k, float(m.get(k, 0))))
            for stream, n in (m.get("emitted_by_stream") or {}).items():
                out.append((ts, f"emitted:{stream}", float(n)))
            user = dict(base.get("user", {}))
            for name, n in (m.get("user") or {}).items():
                user[name] = user.get(name, 0) + n
            for name, n in user.items():
                out.append((ts, f"user:{name}", float(n)))
            out.append((ts, "restarts", float(self.restarts.get(task, 0))))
            out.append((ts, "exceptions", float(self.exceptions.get(task, 0))))
            out.append((ts, "connected", 1.0 if task in self.conns else 0.0))
        out += self.ingress.metrics() if self.ingress.batches else []
        out += self.extra_metrics()
        return out

    def buffered_bytes(self) -> int:
        total = sum(self.waiting_bytes.values()) + sum(p.nbytes for p in self.peers.values())
        for conn in self.conns.values():
            if conn.transport is not None:
                total += conn.transport.get_write_buffer_size()
        return total

    # -- serving ----------------------------------------------------------------
    async def start_peer_server(self, host: str) -> str:
        server = grpc.aio.server(
            options=[
                ("grpc.max_send_message_length", 64 << 20),
                ("grpc.max_receive_message_length", 64 << 20),
            ]
        )
        pb_grpc.add_StreamManagerServicer_to_server(_PeerServicer(self), server)
        pb_grpc.add_IngressServicer_to_server(self.ingress, server)
        port = server.add_insecure_port(f"{host}:0")
        await server.start()
        self._server = server
        return f"{host}:{port}"

    async def start_local_server(self, path: str) -> None:
        loop = asyncio.get_running_loop()
        self._local_server = await loop.create_unix_server(lambda: InstanceConnection(self), path)

    async def close(self) -> None:
        for link in self.peers.values():
            link.close()
        if hasattr(self, "_local_server"):
            self._local_server.close()
        if hasattr(self, "_server"):
            await self._server.stop(0.5)


_CUMULATIVE = ("emitted", "executed", "acked", "failed", "backpressure_ms", "serialization_errors",
               "dead_letters", "record_retries")  # fmt: skip
_GAUGES = (
    "pending",
    "execute_latency_us",
    "in_queue_bytes",
    "in_queue_frames",
    "out_queue_bytes",
    "out_queue_frames",
)


def _payload(frame: bytes) -> memoryview:
    from ..wire._frame import FRAME_HEADER

    slen = frame[FRAME_HEADER.size - 1]
    return memoryview(frame)[FRAME_HEADER.size + slen :]


def _count(frame: bytes) -> int:
    from ..wire._frame import FRAME_HEADER

    return FRAME_HEADER.unpack_from(frame)[3]  # type: ignore[no-any-return]


def _src(frame: bytes) -> int:
    from ..wire._frame import FRAME_HEADER

    return FRAME_HEADER.unpack_from(frame)[2]  # type: ignore[no-any-return]
