"""An instance's executor loop: the main thread, which runs user code.

A spout's loop calls ``next_tuple`` between draining what the stmgr sent
(acks and fails, control); a bolt's loop handles frames as they come
(``Instance.handle``). Both flush the emitter's batches when due and report
metrics every ``METRICS_INTERVAL_S``. The loops end when the instance is
stopping or the stmgr went away.

These are the hot paths of an instance: keep them free of indirection.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ..api import TICK_COMPONENT, TICK_STREAM, Bolt, Spout, Tuple
from ._instance_metrics import METRICS_INTERVAL_S, report_metrics

if TYPE_CHECKING:
    from ._instance import Instance

log = logging.getLogger("headwater.instance")


def run_spout(inst: Instance, spout: Spout) -> None:
    """Call ``next_tuple`` while active, under max pending and not retired; between calls,
    take what the stmgr sent (acks, control), flush what is due and report metrics."""
    max_pending = inst.rc.max_spout_pending if inst.acking else None
    linger = inst.rc.batch_linger_ms / 1000.0
    idle = 0.0
    next_metrics = time.monotonic() + METRICS_INTERVAL_S
    while not inst.stopping:
        _drain_inbox(inst, spout)
        if inst._immediate_acks:
            acks, inst._immediate_acks = inst._immediate_acks, []
            for tup_id in reversed(acks):
                inst.acked += 1
                spout.on_ack(tup_id)
        if inst._immediate_fails:
            fails, inst._immediate_fails = inst._immediate_fails, []
            for tup_id in fails:
                inst.failed += 1
                spout.on_fail(tup_id)
        can_emit = (
            inst.active
            and not inst.retired
            and (max_pending is None or len(inst.pending) < max_pending)
        )
        emitted = False
        if can_emit:
            before = inst.emitter.emitted
            worked = spout.next_tuple()
            emitted = worked is True or inst.emitter.emitted != before
        now = time.monotonic()
        inst.emitter.flush_due(now)
        if not emitted:
            if inst.emitter.buffered:
                # idle: what is buffered goes now (busy, batches fill to their size or linger)
                inst.emitter.flush_all()
            idle = min(max(idle * 2, 0.0005), 0.05 if can_emit else 0.2)
            _wait_inbox(inst, min(idle, linger) if inst.emitter.buffered else idle)
        else:
            idle = 0.0
        if now >= next_metrics:
            report_metrics(inst)
            next_metrics = now + METRICS_INTERVAL_S


def run_bolt(inst: Instance, bolt: Bolt) -> None:
    """Handle every frame from the stmgr; tick and report metrics on time; flush what
    is buffered once no input came for a whole linger."""
    tick = inst.rc.tick_interval_s
    next_tick = time.monotonic() + tick if tick else float("inf")
    next_metrics = time.monotonic() + METRICS_INTERVAL_S
    linger = inst.rc.batch_linger_ms / 1000.0
    handle = inst.handle
    while not inst.stopping:
        frame = inst.inbox.get(timeout=linger if inst.emitter.buffered else 0.2)
        if frame is not None:
            handle(frame, bolt)
            if not inst.gateway.reading and inst.inbox.nbytes <= inst.inbox.low:
                inst.gateway.wake()  # it paused reading at the high mark: resume
            if not len(inst.inbox) and inst.emitter.buffered:
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
        if now >= next_metrics:
            report_metrics(inst)
            next_metrics = now + METRICS_INTERVAL_S


def _wait_inbox(inst: Instance, timeout: float) -> None:
    frame = inst.inbox.get(timeout=timeout)
    if frame is not None:
        inst.handle(frame, inst.component_obj)


def _drain_inbox(inst: Instance, comp: Spout | Bolt) -> None:
    while True:
        frame = inst.inbox.get(timeout=0)
        if frame is None:
            if inst.gateway.eof.is_set():
                inst.stopping = True
            return
        inst.handle(frame, comp)
