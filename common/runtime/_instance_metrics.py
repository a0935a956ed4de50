"""What an instance reports to its stmgr every second: a ``METRICS`` frame.

The stmgr keeps the last report per task (``_stmgr_metrics.TaskMetrics``):
counters are cumulative for the process's life, gauges are the moment's.
``busy_ns`` is the time spent processing (the executor loops' timed work, less
the time an emit waited for room: backpressure), ``received`` the tuples
delivered, ``uptime_ns`` the time since the counters started, read with them: the
interval between two reports by the task's own clock (the health manager's rates divide
by it, not by the time between two readings of reports that arrive a second apart,
unsynchronised), ``hot_keys`` the top keys of a fields-grouped input's sample over
the interval with their shares (``_hot_keys``).
The frame goes on the gateway's own small queue, so a full outbox never
holds it back.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from ..wire import Kind, encode, encode_frame
from ..wire._frame import STMGR
from ._emitter import Emitter
from ._gateway import Gateway
from ._input_gate import InputGate
from ._outputs import Outputs, TaskCounters

METRICS_INTERVAL_S = 1.0


class Reporting(Protocol):
    """Where a task's metrics come from."""

    @property
    def task(self) -> int: ...

    @property
    def counts(self) -> TaskCounters: ...

    @property
    def emitter(self) -> Emitter: ...

    @property
    def outputs(self) -> Outputs: ...

    @property
    def gateway(self) -> Gateway: ...

    @property
    def gate(self) -> InputGate[Any]: ...


def report_metrics(inst: Reporting) -> None:
    c = inst.counts
    gateway = inst.gateway
    inbox, outbox = gateway.inbox, gateway.outbox
    # the loops time their work, an emit blocked on the full outbox included: less that
    # (never back: a block outside the loops, at the end, takes nothing back)
    c.busy_reported = max(c.busy_reported, c.busy_ns - int(outbox.blocked_s * 1e9))
    m = {
        "type": "metrics",
        "task": inst.task,
        "emitted": inst.emitter.emitted,
        "executed": c.executed,
        "received": c.received,
        "busy_ns": c.busy_reported,
        "uptime_ns": time.monotonic_ns() - c.started_ns,
        "acked": c.acked,
        "failed": c.failed,
        "pending": len(inst.outputs.pending),
        "execute_latency_us": (c.exec_ns / c.exec_count / 1000.0) if c.exec_count else 0.0,
        "in_queue_bytes": inbox.nbytes,
        "in_queue_frames": len(inbox),
        "out_queue_bytes": outbox.nbytes,
        "out_queue_frames": len(outbox),
        "backpressure_ms": outbox.blocked_s * 1000.0,
        "serialization_errors": inst.emitter.serialization_errors,
        "dead_letters": inst.outputs.retry.dead_letters,
        "record_retries": inst.outputs.retry.retries,
        "checkpoints": inst.gate.checkpoints,
        "emitted_by_stream": c.stream_emits,
        "user": c.user_counters,
        "hot_keys": c.hot.report(),
    }
    c.exec_ns = c.exec_count = 0
    gateway.metrics_out.append(encode_frame(Kind.METRICS, STMGR, inst.task, 0, b"", encode(m)))
    gateway.wake()
