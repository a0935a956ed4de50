"""An instance's executor: the main thread, which runs user code.

A spout's loop calls ``next_tuple`` between draining what the stmgr sent
(acks and fails, control); a bolt's loop takes frames as they come. Either
hands each frame to the input gate (``InputGate.handle``), which passes it on
to ``Executor.process``: a frame's records to the bolt's ``process`` (a
record that raises is retried, then dead-lettered: ``Outputs.failed``), acks
and fails to the spout, control messages to ``on_control``. Both loops flush
the emitter's batches when due and report metrics every
``METRICS_INTERVAL_S``. They end when the instance is stopping or the stmgr
went away.

Both loops time their work into ``TaskCounters.busy_ns`` (one clock pair a
frame, or, for a spout, a pair around each wait: a spout emitting without a
pause reads no clock more), leaving out the waits for input; the report takes
the time blocked on a full outbox off it (``_instance_metrics``). ``process``
counts the tuples received and samples a fields-grouped input's keys
(``_hot_keys``), and notes a moveable component's keys' sites (``_sites``).

These are the hot paths of an instance: keep them free of indirection.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..api import (
    TICK_COMPONENT,
    TICK_STREAM,
    BatchBolt,
    Bolt,
    ColumnBolt,
    RuntimeConfig,
    Spout,
    Tuple,
    UplinkReceiver,
)
from ..wire import Kind, decode, decode_columns, rows
from ..wire._control import ControlError, ControlMessage, decode_control
from ..wire._frame import UPLINK_HEAD, Frame
from ._instance_metrics import METRICS_INTERVAL_S, Reporting, report_metrics
from ._outputs import Outputs
from ._sites import SiteTable

log = logging.getLogger("headwater.instance")


class Running(Reporting, Protocol):
    """What the executor loops drive: the instance's flags, its input gate and output."""

    active: bool
    stopping: bool

    @property
    def rc(self) -> RuntimeConfig: ...


class Executor:
    """Runs a task's component on the frames past its input gate."""

    def __init__(
        self,
        comp: Spout | Bolt,
        component: str,
        outputs: Outputs,
        task_component: dict[int, str],
        on_control: Callable[[ControlMessage], None],
    ) -> None:
        self.comp = comp
        self.component = component
        self.outputs = outputs
        self.counts = outputs.counts
        self.task_component = task_component  # the component of each task (a revision's)
        self.on_control = on_control
        self.task = outputs.task
        # extension points, checked once: a bolt taking whole frames, an uplink receiver
        self.batch = comp.process_values if isinstance(comp, BatchBolt) else None
        self.columnar = comp.process_columns if isinstance(comp, ColumnBolt) else None
        self.on_uplink = comp.on_uplink if isinstance(comp, UplinkReceiver) else None
        self.sites: SiteTable | None = None  # a component declaring sites(): its keys' sites

    def process(self, f: Frame) -> None:
        """One frame from the stmgr past the gate: data, acks, uplink or a control message."""
        kind = f.kind
        comp = self.comp
        counts = self.counts
        if kind == Kind.DATA or kind == Kind.DATA_COLUMNS or kind == Kind.DATA_ROOTED:
            self._data(f)
        elif kind == Kind.ACKED or kind == Kind.FAILED:
            assert isinstance(comp, Spout)
            pending = self.outputs.pending
            for root in decode(f.payload):
                tup_id = pending.pop(root, _MISSING)
                if tup_id is _MISSING:
                    continue
                if kind == Kind.ACKED:
                    counts.acked += 1
                    comp.on_ack(tup_id)
                else:
                    counts.failed += 1
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
            self.on_control(msg)

    def _data(self, f: Frame) -> None:
        """A frame of tuples, as rows or as columns: counted, its keys sampled and sited,
        then to the bolt: columns whole to a ``ColumnBolt``, untracked rows at once to a
        ``BatchBolt`` (the DSL's chains: no ``Tuple`` per record; their steps retry on
        their own), else a ``Tuple`` per record. A bolt that takes no columns gets the value
        lists a frame of rows would have given."""
        comp, counts, kind = self.comp, self.counts, f.kind
        assert isinstance(comp, Bolt)
        rooted = kind == Kind.DATA_ROOTED
        cols: list[list[Any]] = []
        entries: list[Any] | None  # None: the bolt takes the columns
        if kind == Kind.DATA_COLUMNS:
            cols = decode_columns(f.payload, f.entries)
            entries = None if self.columnar is not None else rows(cols)
        else:
            entries = decode(f.payload)
        src, stream = f.src, f.stream
        component = self.task_component.get(src, "?")
        n = f.entries if entries is None else len(entries)
        counts.received += n
        hot = counts.hot
        if hot.keyed:  # a fields-grouped input: sample its keys (one tuple in 16)
            if entries is None:
                hot.sample_columns(component, stream, cols, n)
            else:
                hot.sample(component, stream, entries, rooted)
        sites = self.sites
        if sites is not None:  # a component that may move: its keys' sites (issue 37)
            keyed = zip(*cols, strict=True) if entries is None else entries
            sites.note(component, stream, keyed, rooted)
        t0 = time.perf_counter_ns()
        if entries is None:
            assert self.columnar is not None
            self.columnar(component, stream, src, cols)
        elif self.batch is not None and not rooted:
            self.batch(component, stream, src, entries)
        else:
            self._process(comp.process, iter(entries), rooted, component, stream, src, time.time())
        counts.exec_ns += time.perf_counter_ns() - t0
        counts.exec_count += n
        counts.executed += n

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
                self.outputs.failed(self.component, process, tup, exc)
                tup = None


_MISSING = object()


def run_spout(inst: Running, spout: Spout) -> None:
    """Call ``next_tuple`` while active, under max pending and not retired; between calls,
    take what the stmgr sent (acks, control), flush what is due and report metrics."""
    max_pending = inst.rc.max_spout_pending if inst.rc.acking else None
    outputs, counts, gate = inst.outputs, inst.counts, inst.gate
    linger = inst.rc.batch_linger_ms / 1000.0
    idle = 0.0
    next_metrics = time.monotonic() + METRICS_INTERVAL_S
    inbox = inst.gateway.inbox
    t0 = time.monotonic_ns()  # busy since (the waits for input are left out)
    while not inst.stopping:
        _drain_inbox(inst)
        if outputs.immediate_acks:
            acks, outputs.immediate_acks = outputs.immediate_acks, []
            for tup_id in reversed(acks):
                counts.acked += 1
                spout.on_ack(tup_id)
        if outputs.immediate_fails:
            fails, outputs.immediate_fails = outputs.immediate_fails, []
            for tup_id in fails:
                counts.failed += 1
                spout.on_fail(tup_id)
        can_emit = (
            inst.active
            and not gate.retired
            and (max_pending is None or len(outputs.pending) < max_pending)
        )
        emitted = False
        if can_emit:
            before = inst.emitter.emitted
            worked = spout.next_tuple()
            emitted = worked is True or inst.emitter.emitted != before
        now_ns = time.monotonic_ns()
        now = now_ns * 1e-9
        inst.emitter.flush_due(now)
        if not emitted:
            if inst.emitter.buffered:
                # idle: what is buffered goes now (busy, batches fill to their size or linger)
                inst.emitter.flush_all()
            idle = min(max(idle * 2, 0.0005), 0.05 if can_emit else 0.2)
            counts.busy_ns += time.monotonic_ns() - t0
            frame = inbox.get(timeout=min(idle, linger) if inst.emitter.buffered else idle)
            t0 = time.monotonic_ns()
            if frame is not None:
                inst.gate.handle(frame)
        else:
            idle = 0.0
        if now >= next_metrics:
            counts.busy_ns += now_ns - t0
            t0 = now_ns
            report_metrics(inst)
            next_metrics = now + METRICS_INTERVAL_S
    counts.busy_ns += time.monotonic_ns() - t0  # the last turn's (an emit blocked, say)


def run_bolt(inst: Running, bolt: Bolt) -> None:
    """Handle every frame from the stmgr; tick and report metrics on time; flush what
    is buffered once no input came for a whole linger."""
    tick = inst.rc.tick_interval_s
    next_tick = time.monotonic() + tick if tick else float("inf")
    next_metrics = time.monotonic() + METRICS_INTERVAL_S
    linger = inst.rc.batch_linger_ms / 1000.0
    handle = inst.gate.handle
    inbox = inst.gateway.inbox
    counts = inst.counts
    while not inst.stopping:
        frame = inbox.get(timeout=linger if inst.emitter.buffered else 0.2)
        t0 = time.monotonic_ns()  # busy from here to the loop's end (one pair a frame)
        if frame is not None:
            handle(frame)
            if not inst.gateway.reading and inbox.nbytes <= inbox.low:
                inst.gateway.wake()  # it paused reading at the high mark: resume
            if not len(inbox) and inst.emitter.buffered:
                inst.emitter.flush_all()  # nothing more to read: what is buffered goes now
        else:  # no input for a whole linger: everything buffered goes now
            if inst.gateway.eof.is_set():
                log.info("stmgr went away; task %d exits", inst.task)
                return
            inst.emitter.flush_all()
        now = time.monotonic()
        inst.emitter.flush_due(now)
        if now >= next_tick:
            assert tick is not None
            bolt.on_tick(Tuple("__tick", TICK_COMPONENT, TICK_STREAM, 0, [], time.time()))
            next_tick = now + tick
        counts.busy_ns += time.monotonic_ns() - t0
        if now >= next_metrics:
            report_metrics(inst)
            next_metrics = now + METRICS_INTERVAL_S


def _drain_inbox(inst: Running) -> None:
    while True:
        frame = inst.gateway.inbox.get(timeout=0)
        if frame is None:
            if inst.gateway.eof.is_set():
                inst.stopping = True
            return
        inst.gate.handle(frame)
