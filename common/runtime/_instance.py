"""An instance process: one task of one component, as in Heron's two-thread instance.

The main thread is the executor (``_executor.py``): it runs user code, routes
and batches what it emits, and reports metrics (``_instance_metrics.py``). The
gateway thread (``_gateway.py``) moves frames between the executor's bounded
queues and the stmgr's Unix socket. A record on which a bolt's ``process``
raises is retried and then dead-lettered (``_dead_letters``); any other
exception in user code (``open``, a spout's ``next_tuple``, a tick) is logged
with its traceback, reported to the stmgr, and ends the process with status 1;
the container restarts it (``instance.py``, the entry point).

The parts of an instance, each in its module: the context its component
sees (``_context.py``), checkpoints and staged revisions (``_barriers.py``),
the control messages from the stmgr (``_instance_control.py``). This module
holds the instance's state, what a component emits, acks and fails, and the
handling of each frame.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from ..api import (
    DEAD_LETTERS,
    BatchBolt,
    Bolt,
    Reliability,
    RuntimeConfig,
    Spout,
    SystemComponent,
    Topology,
    Tuple,
    UplinkReceiver,
)
from ..api._dead_letters import Retry
from ..plan import PhysicalPlan, task_ids
from ..plan._routing import Router
from ..state import KeyedState, State, StatefulComponent
from ..wire import Kind, decode, parse_frame
from ..wire._control import ControlError, DeadLetterReport, Hello, control_frame, decode_control
from ..wire._frame import UPLINK_HEAD
from ._barriers import Barriers
from ._context import InstanceContext
from ._emitter import Emitter
from ._executor import run_bolt, run_spout
from ._gateway import Gateway
from ._instance_control import on_control
from ._instance_metrics import report_metrics
from ._queues import ByteQueue

log = logging.getLogger("headwater.instance")


class Instance:
    """One task's process: its component, queues, emitter and bookkeeping.

    ``run`` on the main thread (the executor); the gateway thread does the I/O.
    """

    def __init__(
        self, topology: Topology, task: int, sock: socket.socket, plan: PhysicalPlan | None = None
    ) -> None:
        self.topology = topology
        self.task = task
        self.ids = plan.ids() if plan is not None else task_ids(topology)
        self.task_component = {t: c for c, ts in self.ids.items() for t in ts}
        self.component = self.task_component[task]
        self.index = self.ids[self.component].index(task)
        self.spec = topology.component(self.component)
        self.conf = topology.merged_config(self.component)
        self.rc = RuntimeConfig.from_mapping(self.conf)
        self.acking = self.rc.acking
        self.exactly_once = self.rc.reliability is Reliability.EXACTLY_ONCE
        self.state = State()
        self.keyed: dict[str, KeyedState] = {}
        self.restored_from = 0
        # barrier alignment: the upstream tasks whose markers a checkpoint waits for
        self.sources = frozenset(
            t for inp in self.spec.inputs for t in self.ids.get(inp.component, [])
        )
        self.downstream = _downstream(topology, self.component, self.ids)
        self.retired = False  # a live edit retired it: it emits no more
        self.barriers = Barriers(self)
        self._seen = self.barriers.seen  # the hot path's view of the aligning inputs
        self.user_log = logging.getLogger(f"headwater.user.{self.component}")
        self.inbox = ByteQueue(self.rc.instance_high_water, self.rc.instance_low_water)
        self.outbox = ByteQueue(self.rc.instance_high_water, self.rc.instance_low_water)
        self.metrics_out: deque[bytes] = deque(maxlen=16)
        self.gateway = Gateway(sock, self.inbox, self.outbox, self.metrics_out)
        self.ctx = InstanceContext(self)
        self.component_obj: Spout | Bolt = self.spec.factory()
        # extension points, checked once: a bolt taking whole frames, a system component
        comp = self.component_obj
        self._batch = comp.process_values if isinstance(comp, BatchBolt) else None
        self.on_system = comp.on_system if isinstance(comp, SystemComponent) else None
        self.on_uplink = comp.on_uplink if isinstance(comp, UplinkReceiver) else None
        self.router = Router(
            topology, self.component, self.ctx, seed=task * 7919 + os.getpid(), ids=self.ids
        )
        self.emitter = Emitter(
            self.router,
            task,
            self.component,
            self._send,
            self.rc.batch_size,
            self.rc.batch_linger_ms / 1000.0,
            log,
        )
        self.stopping = False
        self.active = False
        # spout bookkeeping
        self._next_root = (task << 40) | (int(time.time()) & 0xFFFFFF) << 16
        self.pending: dict[int, Any] = {}
        self._immediate_acks: list[Any] = []
        self._immediate_fails: list[Any] = []
        # counters
        self.executed = 0
        self.acked = 0
        self.failed = 0
        self.exec_ns = 0
        self.exec_count = 0
        self.stream_emits: dict[str, int] = {}
        self.user_counters: dict[str, int] = {}
        # poison records: retried, then dead-lettered (anchored to the tuple being retried)
        self.retry = Retry(self.rc.record_max_retries, self._dead_letter, log)
        self._anchor: Tuple | None = None

    # -- output ---------------------------------------------------------------
    def _send(self, frame: bytes) -> None:
        self.outbox.put(frame)
        self.gateway.wake()

    def emit(
        self,
        values: Sequence[Any],
        stream: str,
        tup_id: Any,
        anchors: Sequence[Tuple] | None,
        direct_task: int | None,
        need_task_ids: bool,
    ) -> list[int] | None:
        vals = values if type(values) is list else list(values)
        roots: list[tuple[int, int]] | None = None
        if self.acking:
            if anchors is not None:
                rooted = [a for a in anchors if a.roots]
                if rooted:
                    seen: dict[tuple[int, int], None] = {}
                    for a in rooted:
                        r = a.roots
                        assert r is not None
                        for i in range(0, len(r), 3):
                            seen[(r[i], r[i + 1])] = None
                    roots = list(seen)
                    anchors = rooted
                else:
                    anchors = None
            elif tup_id is not None and isinstance(self.component_obj, Spout):
                self._next_root += 1
                root = self._next_root
                self.pending[root] = tup_id
                roots = [(self.task, root)]
        else:
            anchors = None
            if tup_id is not None and isinstance(self.component_obj, Spout):
                self._immediate_acks.append(tup_id)
        dests = self.emitter.emit(vals, stream, roots, anchors if roots else None, direct_task)
        if roots is not None and not dests and anchors is None:
            # a tracked tuple nobody subscribes to is complete at once; one the
            # emitter had to drop has failed
            del self.pending[roots[0][1]]
            (self._immediate_fails if self.emitter.dropped else self._immediate_acks).append(tup_id)
        self.emitter.dropped = False
        self.stream_emits[stream] = self.stream_emits.get(stream, 0) + 1
        return dests if need_task_ids else None

    def emitter_for(self, stream: str) -> Callable[[list[Any]], None]:
        """Context.emitter: untracked emits on ``stream`` without the general path's checks."""
        if self.acking:
            emit = self.emit

            def tracked(values: list[Any]) -> None:
                emit(values, stream, None, None, None, False)

            return tracked
        return self.emitter.unrooted(stream, self.stream_emits)

    def emitter_all_for(self, stream: str) -> Callable[[list[list[Any]]], None]:
        """Context.emitter_all: ``emitter_for``'s emit for a list of records, in order."""
        if self.acking:
            emit = self.emitter_for(stream)

            def tracked(records: list[list[Any]]) -> None:
                for values in records:
                    emit(values)

            return tracked
        return self.emitter.unrooted_all(stream, self.stream_emits)

    def ack(self, tup: Tuple) -> None:
        self.acked += 1
        if self.acking:
            self.emitter.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self.failed += 1
        if self.acking:
            self.emitter.fail(tup)

    # -- main loop ------------------------------------------------------------
    def run(self) -> None:
        self.gateway.start()
        self._send(control_frame(Hello(self.task, os.getpid()), src=self.task))
        early: list[bytes] = []
        if self.exactly_once:
            early = self.barriers.await_restore()
        comp = self.component_obj
        if isinstance(comp, StatefulComponent):
            comp.init_state(self.state)
        comp.open(self.ctx)
        if self.exactly_once:
            comp.on_restore(self.restored_from)
        for raw in early:
            self.handle(raw, comp)
        try:
            if isinstance(comp, Spout):
                run_spout(self, comp)
            else:
                run_bolt(self, comp)
        finally:
            self.emitter.flush_all()
            report_metrics(self)
        comp.close()

    def switch_to(self, topology: Topology, ids: dict[str, list[int]], router: Router) -> None:
        """Route with a staged revision from now on (right after its switch checkpoint)."""
        self.topology, self.ids, self.router = topology, ids, router
        self.emitter.switch(router)
        self.task_component = {t: c for c, ts in ids.items() for t in ts}
        self.downstream = _downstream(topology, self.component, ids)
        # an upstream component may have new tasks (another parallelism)
        self.sources = frozenset(t for inp in self.spec.inputs for t in ids.get(inp.component, []))

    def handle(self, raw: bytes, comp: Spout | Bolt) -> None:
        """One frame from the stmgr: data, acks, a marker or a control message."""
        f = parse_frame(raw)
        kind = f.kind
        if self._seen and f.src in self._seen and kind != Kind.CONTROL:
            self.barriers.stash.append(raw)  # this input is past the barrier: hold it back
            return
        if kind == Kind.MARKER:
            self.barriers.on_marker(f.src, f.checkpoint, comp)
            return
        if kind == Kind.DATA or kind == Kind.DATA_ROOTED:
            assert isinstance(comp, Bolt)
            entries = decode(f.payload)
            src = f.src
            component = self._component_of(src)
            stream = f.stream
            now = time.time()
            t0 = time.perf_counter_ns()
            batch = self._batch if kind == Kind.DATA else None
            if batch is not None:  # the DSL's chains: a batch, no Tuple per record
                batch(component, stream, src, entries)  # (their steps retry on their own)
            else:
                self._process(
                    comp.process,
                    iter(entries),
                    kind == Kind.DATA_ROOTED,
                    component,
                    stream,
                    src,
                    now,
                )
            self.exec_ns += time.perf_counter_ns() - t0
            self.exec_count += len(entries)
            self.executed += len(entries)
        elif kind == Kind.ACKED or kind == Kind.FAILED:
            assert isinstance(comp, Spout)
            for root in decode(f.payload):
                tup_id = self.pending.pop(root, _MISSING)
                if tup_id is _MISSING:
                    continue
                if kind == Kind.ACKED:
                    self.acked += 1
                    comp.on_ack(tup_id)
                else:
                    self.failed += 1
                    comp.on_fail(tup_id)
        elif kind == Kind.UPLINK:  # an agent's batch, for a cloud receiver (_receiver.py)
            if self.on_uplink is not None:
                seq, prev = UPLINK_HEAD.unpack_from(f.payload)
                self.on_uplink(f.stream, seq, prev, f.payload[UPLINK_HEAD.size :])
        elif kind == Kind.CONTROL:
            try:
                msg = decode_control(f.payload)
            except ControlError as exc:
                log.warning("task %d: dropping a malformed control frame: %s", self.task, exc)
                return
            on_control(self, msg, comp)

    def _process(
        self,
        process: Callable[[Tuple], None],
        entries: Any,
        rooted: bool,
        component: str,
        stream: str,
        src: int,
        now: float,
    ) -> None:
        """``process`` every entry of a frame; one that raises is retried, then dead-lettered.

        The try covers the whole frame, so a frame without a failure costs nothing more;
        after a failure the loop goes on with the entries left."""
        tup: Tuple | None = None
        while True:
            try:
                if rooted:
                    for values, roots in entries:
                        tup = Tuple(None, component, stream, src, values, now, roots)
                        process(tup)
                else:
                    for values in entries:
                        tup = Tuple(None, component, stream, src, values, now)
                        process(tup)
                return
            except Exception as exc:
                if tup is None:
                    raise
                self._failed(process, tup, exc)
                tup = None

    def _failed(self, process: Callable[[Tuple], None], tup: Tuple, error: Exception) -> None:
        self._anchor = tup if self.acking and tup.roots else None
        try:
            handled = self.retry(self.component, lambda: process(tup), error, tup.values)
        finally:
            self._anchor = None
        if not handled and self.acking and tup.roots:
            self.ack(tup)  # its record is in the dead letters: the tree goes on from there

    def _dead_letter(self, component: str, reason: str, tb: str, record: Any) -> None:
        """Emit a dead letter on ``__dead_letters`` (anchored to the failed tuple under
        at-least-once); report it, bounded; with no sink subscribed, the log keeps it."""
        values = [component, reason, tb, record]
        anchors = [self._anchor] if self._anchor is not None else None
        sink = bool(self.router.selectors(DEAD_LETTERS))
        if sink:
            self.emit(values, DEAD_LETTERS, None, anchors, None, False)
        self.report_dead_letter(component, reason, tb, record, sink)

    def report_dead_letter(
        self, component: str, reason: str, tb: str, record: Any, sink: bool
    ) -> None:
        shown = _shorten(repr(record))
        if self.retry.should_report():
            log.warning(
                "task %d (%s): record dead-lettered%s: %s; record: %s\n%s",
                self.task,
                component,
                "" if sink else " (no dead-letter sink: logged only)",
                reason,
                shown,
                tb,
            )
            report = DeadLetterReport(
                self.task, component, f"dead letter: {reason}; record: {shown}", tb
            )
            self._send(control_frame(report, src=self.task))
        elif not sink:  # nothing else keeps it: log every one
            log.warning(
                "task %d (%s): record dead-lettered: %s; record: %s",
                self.task,
                component,
                reason,
                shown,
            )
        else:
            log.debug("task %d (%s): record dead-lettered: %s", self.task, component, reason)

    def _component_of(self, task: int) -> str:
        return self.task_component.get(task, "?")


_MISSING = object()


def _shorten(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"


def _downstream(topology: Topology, component: str, ids: dict[str, list[int]]) -> list[int]:
    """The tasks that read ``component``'s streams (each gets its checkpoint markers)."""
    return sorted(
        {
            t
            for c in topology.components
            for inp in c.inputs
            if inp.component == component
            for t in ids.get(c.name, ())
        }
    )
