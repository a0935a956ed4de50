"""An instance process: one task of one component, as in Heron's two-thread instance.

The main thread is the executor: it runs user code, routes and batches what
it emits, and reports metrics. The gateway thread moves frames between the
executor's bounded queues and the stmgr's Unix socket. A record on which a
bolt's ``process`` raises is retried and then dead-lettered (``_dead_letters``);
any other exception in user code (``open``, a spout's ``next_tuple``, a tick)
is logged with its traceback, reported to the stmgr, and ends the process with
status 1; the container restarts it.

Live edits reach a running instance as a staged revision (``prepare``): an
untouched instance loads the new topology and, once it has taken the
switch checkpoint's snapshot, routes with the new plan, so every tuple it
emits after the barrier meets the new version of its consumers; a replaced
or removed instance stops after that snapshot (the stmgr holds what comes
after the barrier for its successor) and exits once the checkpoint commits.

Run as ``python -m headwater.common.runtime.instance --help``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import time
import traceback
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._loader import load_topology
from ..api import (
    DEAD_LETTERS,
    DEFAULT_STREAM,
    TICK_COMPONENT,
    TICK_STREAM,
    Bolt,
    Reliability,
    RuntimeConfig,
    Spout,
    Topology,
    Tuple,
)
from ..plan import PhysicalPlan, plan_from_json, restrict, task_ids
from ..state import KeyedState, State, StatefulComponent
from ..state._state import dump_snapshot, load_snapshot
from ..wire import Kind, decode, encode, encode_frame, parse_frame
from ..wire._frame import STMGR, UPLINK_HEAD
from ._dead_letters import Retry
from ._emitter import Emitter
from ._gateway import Gateway
from ._queues import ByteQueue
from ._routing import Router

log = logging.getLogger("headwater.instance")
METRICS_INTERVAL_S = 1.0


class InstanceContext:
    """The runtime as a component sees it (implements ``headwater.Context``)."""

    def __init__(self, instance: Instance) -> None:
        self._i = instance

    @property
    def task_id(self) -> int:
        return self._i.task

    @property
    def component(self) -> str:
        return self._i.component

    @property
    def component_index(self) -> int:
        return self._i.index

    @property
    def topology_name(self) -> str:
        return self._i.topology.name

    @property
    def config(self) -> Mapping[str, Any]:
        return self._i.conf

    @property
    def topology(self) -> Topology:
        return self._i.topology

    @property
    def log(self) -> logging.Logger:
        return self._i.user_log

    def component_tasks(self, component: str) -> list[int]:
        return list(self._i.ids.get(component, []))

    def emit(
        self,
        values: Sequence[Any],
        stream: str = DEFAULT_STREAM,
        *,
        tup_id: Any = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        return self._i.emit(values, stream, tup_id, anchors, direct_task, need_task_ids)

    def emitter(self, stream: str = DEFAULT_STREAM) -> Callable[[list[Any]], None]:
        return self._i.emitter_for(stream)

    def ack(self, tup: Tuple) -> None:
        self._i.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self._i.fail(tup)

    @property
    def state(self) -> State:
        return self._i.state

    def keyed_state(self, name: str) -> KeyedState:
        keyed = self._i.keyed
        if name not in keyed:
            keyed[name] = KeyedState()
        return keyed[name]

    def system(self, msg: dict[str, Any]) -> None:
        """Send a control message to the stmgr (runtime components only)."""
        self._i._send(encode_frame(Kind.CONTROL, STMGR, self._i.task, 0, b"", encode(msg)))

    def system_frame(self, frame: bytes) -> None:
        """Send a ready frame to the stmgr (runtime components only)."""
        self._i._send(frame)

    def incr(self, counter: str, by: int = 1) -> None:
        c = self._i.user_counters
        c[counter] = c.get(counter, 0) + by

    def retry_record(self, component: str, attempt: Callable[[], Any], error: Exception,
                     record: Any) -> bool:  # fmt: skip
        return self._i.retry(component, attempt, error, record)

    def report_dead_letter(self, row: Sequence[Any], origin: str) -> None:
        """Report a dead letter made elsewhere (an edge domain's, relayed to the cloud) to
        ``/exceptions``, bounded as this instance's own (runtime components only)."""
        component, reason, tb, record = row
        self._i.report_dead_letter(f"{component} ({origin})", reason, tb, record, sink=True)


class Instance:
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
        # barrier alignment: upstream tasks, those whose marker arrived, and
        # frames held back from them until the checkpoint is taken
        self.sources = frozenset(
            t for inp in self.spec.inputs for t in self.ids.get(inp.component, [])
        )
        self.downstream = _downstream(topology, self.component, self.ids)
        # a staged revision: (switch checkpoint, topology, ids, router) or retire after it
        self._next: tuple[int, Topology, dict[str, list[int]], Router] | None = None
        self._retire_at = 0
        self.retired = False
        self._barrier = 0
        self._barrier_seen: set[int] = set()
        self._stash: list[bytes] = []
        self.checkpoints = 0
        self.user_log = logging.getLogger(f"headwater.user.{self.component}")
        self.inbox = ByteQueue(self.rc.instance_high_water, self.rc.instance_low_water)
        self.outbox = ByteQueue(self.rc.instance_high_water, self.rc.instance_low_water)
        self.metrics_out: deque[bytes] = deque(maxlen=16)
        self.gateway = Gateway(sock, self.inbox, self.outbox, self.metrics_out)
        self.ctx = InstanceContext(self)
        self.component_obj: Spout | Bolt = self.spec.factory()
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
        self._send(
            encode_frame(
                Kind.CONTROL,
                STMGR,
                self.task,
                0,
                b"",
                encode({"type": "hello", "task": self.task, "pid": os.getpid()}),
            )
        )
        early: list[bytes] = []
        if self.exactly_once:
            early = self._await_restore()
        comp = self.component_obj
        if isinstance(comp, StatefulComponent):
            comp.init_state(self.state)
        comp.open(self.ctx)
        if self.exactly_once:
            comp.on_restore(self.restored_from)
        for raw in early:
            self._handle(raw, comp)
        try:
            if isinstance(self.component_obj, Spout):
                self._run_spout(self.component_obj)
            else:
                self._run_bolt(self.component_obj)
        finally:
            self.emitter.flush_all()
            self._report_metrics()
        self.component_obj.close()

    def _run_spout(self, spout: Spout) -> None:
        max_pending = self.rc.max_spout_pending if self.acking else None
        linger = self.rc.batch_linger_ms / 1000.0
        idle = 0.0
        next_metrics = time.monotonic() + METRICS_INTERVAL_S
        while not self.stopping:
            self._drain_inbox(spout)
            if self._immediate_acks:
                acks, self._immediate_acks = self._immediate_acks, []
                for tup_id in reversed(acks):
                    self.acked += 1
                    spout.on_ack(tup_id)
            if self._immediate_fails:
                fails, self._immediate_fails = self._immediate_fails, []
                for tup_id in fails:
                    self.failed += 1
                    spout.on_fail(tup_id)
            can_emit = (
                self.active
                and not self.retired
                and (max_pending is None or len(self.pending) < max_pending)
            )
            emitted = False
            if can_emit:
                before = self.emitter.emitted
                worked = spout.next_tuple()
                emitted = worked is True or self.emitter.emitted != before
            now = time.monotonic()
            self.emitter.flush_due(now)
            if not emitted:
                if not can_emit:
                    # at max pending (or paused): acks come back only for what has left
                    self.emitter.flush_all()
                idle = min(max(idle * 2, 0.0005), 0.05 if can_emit else 0.2)
                self._wait_inbox(min(idle, linger) if self.emitter.buffered else idle)
            else:
                idle = 0.0
            if now >= next_metrics:
                self._report_metrics()
                next_metrics = now + METRICS_INTERVAL_S

    def _run_bolt(self, bolt: Bolt) -> None:
        tick = self.rc.tick_interval_s
        next_tick = time.monotonic() + tick if tick else float("inf")
        next_metrics = time.monotonic() + METRICS_INTERVAL_S
        linger = self.rc.batch_linger_ms / 1000.0
        while not self.stopping:
            frame = self.inbox.get(timeout=linger if self.emitter.buffered else 0.2)
            if frame is not None:
                self._handle(frame, bolt)
                if not self.gateway.reading and self.inbox.nbytes <= self.inbox.low:
                    self.gateway.wake()  # it paused reading at the high mark: resume
            else:  # no input for a whole linger: everything buffered goes now
                if self.gateway.eof.is_set():
                    log.info("stmgr went away; task %d exits", self.task)
                    return
                self.emitter.flush_all()
            now = time.monotonic()
            self.emitter.flush_due(now)
            if now >= next_tick:
                assert tick is not None
                bolt.on_tick(Tuple("__tick", TICK_COMPONENT, TICK_STREAM, 0, [], time.time()))
                next_tick = now + tick
            if now >= next_metrics:
                self._report_metrics()
                next_metrics = now + METRICS_INTERVAL_S

    # -- checkpoints ------------------------------------------------------------
    def _await_restore(self) -> list[bytes]:
        """Block until the stmgr hands over this task's snapshot; keep what came before."""
        early: list[bytes] = []
        while True:
            raw = self.inbox.get(timeout=0.5)
            if raw is None:
                if self.gateway.eof.is_set() or self.stopping:
                    raise SystemExit(0)
                continue
            f = parse_frame(raw)
            if f.kind != Kind.CONTROL:
                early.append(raw)
                continue
            msg = decode(f.payload)
            if msg.get("type") != "restore":
                early.append(raw)
                continue
            self.restored_from = int(msg["checkpoint"])
            if msg.get("blob") is not None:
                self.state, self.keyed, _ = load_snapshot(msg["blob"])
            log.info("task %d restored from checkpoint %d", self.task, self.restored_from)
            return early

    def _on_marker(self, src: int, checkpoint: int, comp: Spout | Bolt) -> None:
        if checkpoint < self._barrier:
            return  # from a checkpoint already taken: cannot happen in one epoch
        if checkpoint > self._barrier:
            self._barrier = checkpoint
            self._barrier_seen = set()
        self._barrier_seen.add(src)
        if self._barrier_seen >= self.sources:
            self._take_snapshot(checkpoint)
            self._barrier_seen = set()
            stash, self._stash = self._stash, []
            for raw in stash:
                self._handle(raw, comp)

    def _take_snapshot(self, checkpoint: int) -> None:
        comp = self.component_obj
        if isinstance(comp, StatefulComponent):
            comp.pre_save(checkpoint)
        comp.on_checkpoint(checkpoint)
        blob = dump_snapshot(self.state, self.keyed)
        # everything emitted before the barrier leaves before the markers
        self.emitter.flush_all()
        for task in self.downstream:
            self._send(encode_frame(Kind.MARKER, task, self.task, checkpoint, b"", b""))
        self._send(encode_frame(Kind.STATE, STMGR, self.task, checkpoint, b"", blob))
        self.checkpoints += 1
        if self._next is not None and self._next[0] == checkpoint:
            _, topology, ids, router = self._next
            self._next = None
            self.topology, self.ids, self.router = topology, ids, router
            self.emitter.router = router
            self.task_component = {t: c for c, ts in ids.items() for t in ts}
            self.downstream = _downstream(topology, self.component, ids)
            # an upstream component may have new tasks (another parallelism)
            self.sources = frozenset(t for inp in self.spec.inputs
                                     for t in ids.get(inp.component, []))  # fmt: skip
            log.info("task %d routes with the new revision from checkpoint %d", self.task,
                     checkpoint)  # fmt: skip
        elif self._retire_at == checkpoint:
            self.retired = True
            self.emitter.flush_all()
            log.info("task %d retires after checkpoint %d", self.task, checkpoint)

    def _prepare(self, msg: dict[str, Any]) -> None:
        """Stage a revision: retire at its switch checkpoint, or load its routing."""
        at = int(msg["at"])
        if msg.get("retire"):
            self._retire_at, self._next = at, None
            return
        with open(msg["plan"]) as f:
            plan = plan_from_json(f.read())
        topology = restrict(load_topology(msg["file"], msg.get("topology")), plan)
        ids = plan.ids()
        router = Router(topology, self.component, self.ctx, self.task * 7919 + os.getpid(), ids)
        self._next, self._retire_at = (at, topology, ids, router), 0

    def _wait_inbox(self, timeout: float) -> None:
        frame = self.inbox.get(timeout=timeout)
        if frame is not None:
            self._handle(frame, self.component_obj)

    def _drain_inbox(self, comp: Spout | Bolt) -> None:
        while True:
            frame = self.inbox.get(timeout=0)
            if frame is None:
                if self.gateway.eof.is_set():
                    self.stopping = True
                return
            self._handle(frame, comp)

    def _handle(self, raw: bytes, comp: Spout | Bolt) -> None:
        f = parse_frame(raw)
        kind = f.kind
        if self._barrier_seen and f.src in self._barrier_seen and kind != Kind.CONTROL:
            self._stash.append(raw)  # this input is past the barrier: hold it back
            return
        if kind == Kind.MARKER:
            self._on_marker(f.src, f.n, comp)
            return
        if kind == Kind.DATA or kind == Kind.DATA_ROOTED:
            assert isinstance(comp, Bolt)
            entries = decode(f.payload)
            src = f.src
            component = self._component_of(src)
            stream = f.stream
            now = time.time()
            t0 = time.perf_counter_ns()
            batch = getattr(comp, "process_values", None) if kind == Kind.DATA else None
            if batch is not None:  # the DSL's chains: a batch, no Tuple per record
                batch(component, stream, src, entries)  # (their steps retry on their own)
            else:
                self._process(comp.process, iter(entries), kind == Kind.DATA_ROOTED,
                              component, stream, src, now)  # fmt: skip
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
            on_uplink = getattr(comp, "on_uplink", None)
            if on_uplink is not None:
                seq, prev = UPLINK_HEAD.unpack_from(f.payload)
                on_uplink(f.stream, seq, prev, f.payload[UPLINK_HEAD.size :])
        elif kind == Kind.CONTROL:
            msg = decode(f.payload)
            kind_ = msg.get("type")
            if kind_ == "activate" and isinstance(comp, Spout):
                if not self.active:
                    self.active = True
                    comp.activate()
            elif kind_ == "deactivate" and isinstance(comp, Spout):
                if self.active:
                    self.active = False
                    comp.deactivate()
            elif kind_ == "stop":
                self.stopping = True
            elif kind_ == "checkpoint" and isinstance(comp, Spout):
                self._take_snapshot(int(msg["id"]))
            elif kind_ == "commit":
                comp.on_commit(int(msg["id"]))
                if self.retired and int(msg["id"]) >= self._retire_at:
                    self.stopping = True  # its last checkpoint is published: done
            elif kind_ == "prepare":
                self._prepare(msg)
            elif kind_ == "abort":
                self._next, self._retire_at = None, 0
            else:
                on_system = getattr(comp, "on_system", None)
                if on_system is not None:
                    on_system(msg)

    def _process(self, process: Callable[[Tuple], None], entries: Any, rooted: bool,
                 component: str, stream: str, src: int, now: float) -> None:  # fmt: skip
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

    def report_dead_letter(self, component: str, reason: str, tb: str, record: Any,
                           sink: bool) -> None:  # fmt: skip
        shown = _shorten(repr(record))
        if self.retry.should_report():
            log.warning("task %d (%s): record dead-lettered%s: %s; record: %s\n%s", self.task,
                        component, "" if sink else " (no dead-letter sink: logged only)",
                        reason, shown, tb)  # fmt: skip
            report = {"type": "dead_letter", "task": self.task, "component": component,
                      "message": f"dead letter: {reason}; record: {shown}",
                      "traceback": tb}  # fmt: skip
            self._send(encode_frame(Kind.CONTROL, STMGR, self.task, 0, b"", encode(report)))
        elif not sink:  # nothing else keeps it: log every one
            log.warning("task %d (%s): record dead-lettered: %s; record: %s", self.task,
                        component, reason, shown)  # fmt: skip
        else:
            log.debug("task %d (%s): record dead-lettered: %s", self.task, component, reason)

    def _component_of(self, task: int) -> str:
        return self.task_component.get(task, "?")

    def _report_metrics(self) -> None:
        m = {
            "type": "metrics",
            "task": self.task,
            "emitted": self.emitter.emitted,
            "executed": self.executed,
            "acked": self.acked,
            "failed": self.failed,
            "pending": len(self.pending),
            "execute_latency_us": (self.exec_ns / self.exec_count / 1000.0)
            if self.exec_count
            else 0.0,
            "in_queue_bytes": self.inbox.nbytes,
            "in_queue_frames": len(self.inbox),
            "out_queue_bytes": self.outbox.nbytes,
            "out_queue_frames": len(self.outbox),
            "backpressure_ms": self.outbox.blocked_s * 1000.0,
            "serialization_errors": self.emitter.serialization_errors,
            "dead_letters": self.retry.dead_letters,
            "record_retries": self.retry.retries,
            "checkpoints": self.checkpoints,
            "emitted_by_stream": self.stream_emits,
            "user": self.user_counters,
        }
        self.exec_ns = self.exec_count = 0
        self.metrics_out.append(encode_frame(Kind.METRICS, STMGR, self.task, 0, b"", encode(m)))
        self.gateway.wake()


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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="headwater-instance")
    p.add_argument("--topology-file", required=True)
    p.add_argument("--topology", default=None)
    p.add_argument("--task", type=int, required=True)
    p.add_argument("--socket", required=True)
    p.add_argument("--plan-file", default=None, help="task ids (a revised topology's plan)")
    args = p.parse_args(argv)
    logging.basicConfig(
        level=os.environ.get("HEADWATER_LOG_LEVEL", "INFO"),
        format=f"%(asctime)s %(levelname)s task={args.task} %(name)s: %(message)s",
    )
    stop = {"flag": False}
    inst: Instance | None = None

    def on_term(signum: int, frame: object) -> None:
        stop["flag"] = True
        if inst is not None:
            inst.stopping = True

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect(args.socket)
    comp = "?"  # until the topology is loaded
    try:
        topology = load_topology(args.topology_file, args.topology)
        plan = None
        if args.plan_file:
            with open(args.plan_file) as f:
                plan = plan_from_json(f.read())
            topology = restrict(topology, plan)
        ids = plan.ids() if plan is not None else task_ids(topology)
        comp = next((c for c, ts in ids.items() if args.task in ts), "?")
        inst = Instance(topology, args.task, sock, plan)
        if stop["flag"]:
            return 0
        inst.run()
    except Exception as exc:
        tb = traceback.format_exc()
        log.error("task %d (%s) failed: user code raised\n%s", args.task, comp, tb)
        report = {
            "type": "exception",
            "task": args.task,
            "component": comp,
            "message": f"{type(exc).__name__}: {exc}",
            "traceback": tb,
        }
        frame = encode_frame(Kind.CONTROL, STMGR, args.task, 0, b"", encode(report))
        if inst is not None and inst.gateway.is_alive():
            inst.metrics_out.append(frame)
            inst.gateway.stop()
            inst.gateway.join(2.0)
        else:
            from ..wire._frame import length_prefix

            sock.setblocking(True)
            sock.sendall(length_prefix(frame) + frame)
        return 1
    finally:
        if inst is not None:
            inst.gateway.stop()
            inst.gateway.join(2.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
