"""What an instance reports to its stmgr every second: a ``METRICS`` frame.

The stmgr keeps the last report per task (``_stmgr_metrics.TaskMetrics``):
counters are cumulative for the process's life, gauges are the moment's.
The frame goes on the gateway's own small queue, so a full outbox never
holds it back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..wire import Kind, encode, encode_frame
from ..wire._frame import STMGR

if TYPE_CHECKING:
    from ._instance import Instance

METRICS_INTERVAL_S = 1.0


def report_metrics(inst: Instance) -> None:
    m = {
        "type": "metrics",
        "task": inst.task,
        "emitted": inst.emitter.emitted,
        "executed": inst.executed,
        "acked": inst.acked,
        "failed": inst.failed,
        "pending": len(inst.pending),
        "execute_latency_us": (inst.exec_ns / inst.exec_count / 1000.0) if inst.exec_count else 0.0,
        "in_queue_bytes": inst.inbox.nbytes,
        "in_queue_frames": len(inst.inbox),
        "out_queue_bytes": inst.outbox.nbytes,
        "out_queue_frames": len(inst.outbox),
        "backpressure_ms": inst.outbox.blocked_s * 1000.0,
        "serialization_errors": inst.emitter.serialization_errors,
        "dead_letters": inst.retry.dead_letters,
        "record_retries": inst.retry.retries,
        "checkpoints": inst.barriers.checkpoints,
        "emitted_by_stream": inst.stream_emits,
        "user": inst.user_counters,
    }
    inst.exec_ns = inst.exec_count = 0
    inst.metrics_out.append(encode_frame(Kind.METRICS, STMGR, inst.task, 0, b"", encode(m)))
    inst.gateway.wake()
