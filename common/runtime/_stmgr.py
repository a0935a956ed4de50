"""The stream manager: routes frames between local instances and peer stmgrs.

One per container, on an asyncio loop. Local instances connect over a Unix
socket (``_ipc.py``); peer stmgrs over gRPC streams (``_peers.py``, each stmgr
dials every peer once and sends on that stream). A frame is routed by its
header (kind, dest task); payloads are never decoded here, except the ack
bookkeeping this stmgr keeps for its own spouts (``_acking.SpoutAcks``).

``StreamManager`` composes the parts and routes; each part is one concept:

- ``_backpressure.Backpressure``: scoped backpressure (congestion keys, the
  peers' keys, the spouts to throttle);
- ``_staging.Staging``: frames waiting for an instance or a peer, and a live
  edit's retiring tasks;
- ``_stmgr_metrics``: the tasks' reports and the metrics snapshot;
- ``_stmgr_sessions.InstanceSessions``: the local instances' connections
  (hello, loss, retirement), activating spouts and finding silent tasks;
- ``_hooks.StreamManagerHooks``: what the container hears of (snapshots,
  hellos, crash reports, system messages, outbox batches).

Control messages are typed (``wire/_control.py``); a malformed one is logged
and dropped.
"""

from __future__ import annotations

import logging
import struct

import grpc

from .._clock import SYSTEM_CLOCK, Clock
from ..api import RuntimeConfig, Topology
from ..plan import PhysicalPlan, upstream_spouts
from ..security import Transport
from ..wire import Kind, decode, parse_frame
from ..wire._control import (
    Alive,
    Backpressure,
    BackpressureReset,
    ControlError,
    ControlMessage,
    DeadLetterReport,
    ExceptionReport,
    Hello,
    UplinkFeedback,
    control_frame,
    decode_control,
)
from ..wire._frame import frame_dest, frame_payload, frame_src
from ._acking import SpoutAcks
from ._backpressure import Backpressure as BackpressureState
from ._hooks import Metric, NoHooks, StreamManagerHooks
from ._ingress import Ingress
from ._ipc import InstanceConnection, serve_instances, task_key
from ._peers import PeerLink, peer_key, serve_peers
from ._staging import Staging, peer_slot
from ._stmgr_metrics import TaskMetrics, snapshot
from ._stmgr_sessions import InstanceSessions

_SEQ = struct.Struct("<q")  # an outbox frame's sequence number (see _outbox_sink.py)
# the kinds routed to a task by the header alone, and those an instance sends for routing
_ROUTED = frozenset(int(k) for k in (Kind.DATA, Kind.DATA_ROOTED, Kind.DATA_COLUMNS, Kind.MARKER))
_FROM_TASKS = _ROUTED | {int(Kind.ACK), int(Kind.FAIL)}
log = logging.getLogger("headwater.stmgr")


class StreamManager:
    """Routing for one container, composing acking, backpressure, staging and metrics.

    Not thread-safe: everything runs on the container's event loop.
    """

    def __init__(
        self,
        topology: Topology,
        plan: PhysicalPlan,
        container: int,
        hooks: StreamManagerHooks = NoHooks(),  # noqa: B008  (stateless)
        clock: Clock = SYSTEM_CLOCK,
        transport: Transport | None = None,
    ) -> None:
        self.container = container
        # how its peer and uplink links speak (the container's node's credentials)
        self.transport = transport if transport is not None else Transport.insecure()
        self.rc = RuntimeConfig.from_mapping(topology.config)
        self.hooks = hooks
        self.clock = clock
        self.epoch = 0
        self.active = False
        self.conns: dict[int, InstanceConnection] = {}
        self.peers: dict[int, PeerLink] = {}
        self.peer_addresses: dict[int, str] = {}
        self.staging = Staging()
        self._retiring = self.staging.retiring  # mutated in place only: the hot path's view
        self.acks = SpoutAcks(self.rc.message_timeout_s, self.deliver, self.conns, clock.monotonic)
        self._apply_acks, self._add_roots = self.acks.apply, self.acks.add_roots  # hot paths
        self.expire_roots = self.acks.expire
        self.bp = BackpressureState(container, self, clock)
        self.congestion_off = self.bp.off  # a buffer of ours is under its low mark
        self.tasks = TaskMetrics()
        self.ingress = Ingress(self)  # agents' uplinks, to the receivers here
        sessions = self.sessions = InstanceSessions(
            self,
            self.staging,
            fold=self.tasks.fold,
            forget_spout=self.acks.forget_task,
            on_hello=hooks.on_hello,
        )
        self.on_instance_hello = sessions.on_instance_hello
        self.on_instance_lost = sessions.on_instance_lost
        self.retire = sessions.retire
        self.set_active = sessions.set_active
        self.silent = sessions.silent
        self.restarts = self.tasks.restarts  # the container counts the restarts it makes
        # counters, on the hot path (see _stmgr_metrics)
        self.bytes_in = self.bytes_out = self.frames_in = self.frames_out = 0
        self.set_plan(topology, plan)

    # -- plans ------------------------------------------------------------------
    def set_plan(self, topology: Topology, plan: PhysicalPlan) -> None:
        """Route by ``plan`` (a first plan, a revision taking over, or a rollback)."""
        self.topology, self.plan = topology, plan
        self.local_tasks = {i.task_id for i in plan.in_container(self.container)}
        self.task_container = {i.task_id: i.container for i in plan.instances}
        self.task_component = {i.task_id: i.component for i in plan.instances}
        self.spout_components = {c.name for c in topology.components if c.kind == "spout"}
        self._upstream = upstream_spouts(topology)
        for task in self.staging.forget_removed(self.local_tasks):
            self.congestion_off(task_key(task))  # nothing waits for it any more

    def stage(self, plan: PhysicalPlan, retiring: set[int], at: int) -> None:
        """Get ready for a switch at checkpoint ``at``: know the new tasks, hold the old ones."""
        for i in plan.instances:
            self.task_container.setdefault(i.task_id, i.container)
            self.task_component.setdefault(i.task_id, i.component)
            if i.container == self.container:
                self.local_tasks.add(i.task_id)
        self.staging.stage(retiring, at)

    @property
    def retiring(self) -> dict[int, tuple[int, set[int]]]:
        """The staged edit's retiring tasks (``Staging.retiring``)."""
        return self._retiring

    @retiring.setter
    def retiring(self, value: dict[int, tuple[int, set[int]]]) -> None:
        self._retiring.clear()
        self._retiring.update(value)

    # -- routing ----------------------------------------------------------------
    def route(self, frame: bytes) -> None:
        kind = frame[0]
        if kind in _ROUTED:
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
            msg = _decode_control(frame)
            if isinstance(msg, (Backpressure, BackpressureReset)):
                self.bp.on_peer(msg)
            elif msg is not None:
                log.warning("dropping a %r control message from a peer", msg.TYPE)
        else:
            log.warning("dropping unexpected frame kind %d from a peer", kind)

    def on_local_frame(self, conn: InstanceConnection, frame: bytes) -> None:
        self.frames_in += 1
        kind = frame[0]
        if kind in _FROM_TASKS:  # data (rows, columns, rooted), markers, acks, fails
            self.route(frame)
        elif kind == Kind.ROOTS:
            self._add_roots(frame_src(frame), frame)
        elif kind == Kind.METRICS:
            self.tasks.report(decode(frame_payload(frame)))
        elif kind == Kind.STATE:
            f = parse_frame(frame)  # once per checkpoint and task: off the hot path
            self.hooks.on_state(f.src, f.checkpoint, bytes(f.payload))
        elif kind == Kind.CONTROL:
            msg = _decode_control(frame)
            if msg is not None:
                self._on_instance_control(conn, msg)
        elif kind == Kind.OUTBOX:
            f = parse_frame(frame)
            rows = bytes(f.payload[_SEQ.size :])
            if not self.hooks.on_outbox(f.src, f.stream, _SEQ.unpack_from(f.payload)[0], rows):
                log.warning("dropping an outbox frame: this container has no uplink")

    def _on_instance_control(self, conn: InstanceConnection, msg: ControlMessage) -> None:
        match msg:
            case Alive():
                pass  # the gateway's heartbeat: data_received noted it
            case Hello(task=task, pid=pid):
                self.on_instance_hello(conn, task, pid)
            case ExceptionReport(task=task):
                self.tasks.crashed(task)
                self.hooks.on_report(msg)
            case DeadLetterReport():  # counted by the instance (dead_letters)
                self.hooks.on_report(msg)
            case UplinkFeedback():  # a receiver's, to its agents' streams
                self.ingress.feedback(msg)
            case _:
                self.hooks.on_system(msg)

    def deliver(self, task: int, frame: bytes) -> None:
        if self._retiring and task in self._retiring and self.staging.hold(task, frame):
            # kept for the successor: bounded like frames parked for a task not connected
            if self.staging.nbytes[task] >= self.rc.stmgr_high_water:
                self.congestion_on(task_key(task), task)
            return
        conn = self.conns.get(task)
        if conn is not None:
            conn.write(frame)
            self.frames_out += 1
            return
        if self.staging.park(task, frame) >= self.rc.stmgr_high_water:
            self.congestion_on(task_key(task), task)

    def on_write_buffer(self, conn: InstanceConnection) -> None:
        """``conn``'s write buffer crossed a water mark (ignored from a replaced one)."""
        if conn.task is not None and self.conns.get(conn.task) is conn:
            self.check_task_buffer(conn.task)

    def check_task_buffer(self, task: int) -> None:
        """Set the key ``task:N`` from what waits for the task: its connection's write
        buffer over the high mark (until it falls under the low one), or parked frames
        over the high mark. One place decides, so no order of parking, connecting,
        writing and replacing can leave a full buffer without its key (asyncio reports
        each crossing once)."""
        conn = self.conns.get(task)
        parked = self.staging.nbytes.get(task, 0)
        if (conn is not None and conn.write_paused) or parked >= self.rc.stmgr_high_water:
            self.congestion_on(task_key(task), task)
        else:
            self.congestion_off(task_key(task))

    def _to_peer(self, dest: int, frame: bytes) -> None:
        container = self.task_container.get(dest)
        if container is None:
            log.warning("dropping frame for unknown task %d", dest)
            return
        link = self.peers.get(container)
        if link is None:  # plan not complete yet: park the frame until the peer is known
            if self.staging.park(peer_slot(container), frame) >= self.rc.stmgr_high_water:
                # lifted by the link once it has sent what it took over (PeerLink._frames)
                self.congestion_on(peer_key(container), None, container)
            return
        link.send(frame)

    # -- rollback ---------------------------------------------------------------
    def reset(self, epoch: int) -> None:
        """Roll back: forget every frame, root and connection of the previous epoch."""
        self.epoch = epoch
        self.active = False
        for task, conn in self.conns.items():
            conn.stale = True
            self.tasks.fold(task)
        self.conns.clear()
        self.staging.clear()
        for link in self.peers.values():
            link.clear()
        self.acks.reset()
        self.bp.reset()

    def send_control(self, task: int, msg: ControlMessage) -> None:
        """Send ``msg`` to local ``task`` if it is connected."""
        conn = self.conns.get(task)
        if conn is not None:
            conn.write(control_frame(msg, dest=task))

    # -- peers ------------------------------------------------------------------
    def set_peers(self, addresses: dict[int, str]) -> None:
        for container, address in addresses.items():
            if container == self.container:
                continue
            link = self.peers.get(container)
            if link is not None and link.address == address:
                continue
            # the peer moved (restarted): what the old link never sent goes on the new one,
            # which lifts the key ``peer:N`` once it has sent it (dropped, the queue left the
            # key on, and with the spouts throttled nothing more came to lift it)
            unsent = link.give_up() if link is not None else []
            self.peers[container] = link = PeerLink(self, container, address)
            for frame in unsent + self.staging.take(peer_slot(container)):
                link.send(frame)
        self.peer_addresses = dict(addresses)

    def hello_frames(self) -> list[bytes]:
        """Sent first on every new peer stream: forget our old requests, here are the live ones."""
        return [control_frame(msg) for msg in self.bp.hello()]

    # -- backpressure (see _backpressure.py) ---------------------------------------
    def congestion_on(self, key: str, task: int | None, container: int | None = None) -> None:
        """The buffer ``key`` (towards local ``task``, or peer ``container``) is full."""
        if key in self.bp.local:
            return
        if task is not None:
            if self.task_component[task] in self.spout_components:
                return  # a spout's inbox holds acks only: bounded by max pending
            spouts = self._upstream[self.task_component[task]]
        else:
            spouts = frozenset().union(
                *(
                    self._upstream[self.task_component[t]]
                    for t, c in self.task_container.items()
                    if c == container
                )
            )
        self.bp.on(key, spouts)

    def broadcast(self, msg: ControlMessage) -> None:
        frame = control_frame(msg)
        for link in self.peers.values():
            link.send_control(frame)  # ahead of data: a congested link must still carry it

    def throttle(self, spouts: frozenset[str]) -> None:
        for task, conn in self.conns.items():
            comp = self.task_component[task]
            if comp in self.spout_components:
                conn.set_reading(comp not in spouts)

    @property
    def throttled(self) -> frozenset[str]:
        return self.bp.throttled

    @property
    def throttled_time_s(self) -> float:
        return self.bp.times()[1]

    # -- metrics (see _stmgr_metrics.py) ---------------------------------------------
    def metrics(self) -> list[Metric]:
        ingress = self.ingress.metrics() if self.ingress.batches else []
        return snapshot(self) + ingress + self.hooks.extra_metrics()

    # -- serving ----------------------------------------------------------------
    async def start_peer_server(self, host: str) -> str:
        self._server: grpc.aio.Server | None
        self._server, address = await serve_peers(self, host, self.ingress)
        return address

    async def start_local_server(self, path: str) -> None:
        self._local_server = await serve_instances(self, path)

    async def close(self) -> None:
        for link in self.peers.values():
            link.close()
        if hasattr(self, "_local_server"):
            self._local_server.close()
        if getattr(self, "_server", None) is not None:
            assert self._server is not None
            await self._server.stop(0.5)


def _decode_control(frame: bytes) -> ControlMessage | None:
    """The control message in ``frame``; None (logged) if it is malformed."""
    try:
        return decode_control(frame_payload(frame))
    except ControlError as exc:
        log.warning("dropping a malformed control frame from task %d: %s", frame_src(frame), exc)
        return None
