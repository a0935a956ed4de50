"""A stream manager's metrics: its own counters' snapshot and its tasks' reports.

Each instance reports a ``METRICS`` frame every second (``_instance_metrics.py``);
``TaskMetrics`` keeps the last report per task and folds the counters of an
incarnation that went away into the task's totals, so a restart never makes a
counter go back. ``snapshot`` is what the container sends its topology master:
``(scope, name, value)`` triples, scope ``container:N`` or ``task:N``.

The byte and frame counters themselves live on the ``StreamManager``: they are
incremented on the routing hot path, where one more attribute lookup per
frame would show. ``snapshot`` reads them through ``MetricsHost``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sized
from typing import TYPE_CHECKING, Any, Protocol

from ._hooks import Metric

if TYPE_CHECKING:
    from ._backpressure import Backpressure
    from ._ipc import InstanceConnection
    from ._peers import PeerLink
    from ._staging import Staging

CUMULATIVE = (
    "emitted",
    "executed",
    "acked",
    "failed",
    "backpressure_ms",
    "serialization_errors",
    "dead_letters",
    "record_retries",
    "busy_ns",
    "received",
    "uptime_ns",  # a clock: a restarted task's goes on from the dead incarnation's
)
GAUGES = (
    "pending",
    "execute_latency_us",
    "in_queue_bytes",
    "in_queue_frames",
    "out_queue_bytes",
    "out_queue_frames",
)


class TaskMetrics:
    """The local tasks' last reports, their dead incarnations' totals, restarts, crashes."""

    def __init__(self) -> None:
        self.last: dict[int, dict[str, Any]] = {}
        self.base: dict[int, dict[str, Any]] = {}
        self.restarts: dict[int, int] = {}
        self.exceptions: dict[int, int] = {}

    def report(self, m: dict[str, Any]) -> None:
        self.last[m["task"]] = m

    def crashed(self, task: int) -> None:
        self.exceptions[task] = self.exceptions.get(task, 0) + 1

    def fold(self, task: int) -> None:
        """Add a dead incarnation's counters to the task's totals, so they never go back."""
        last = self.last.pop(task, None)
        if last:
            base = self.base.setdefault(task, {})
            for k, v in last.items():
                if k in CUMULATIVE:
                    base[k] = base.get(k, 0) + v
            user = base.setdefault("user", {})
            for k, v in (last.get("user") or {}).items():
                user[k] = user.get(k, 0) + v

    def task_metrics(self, task: int, connected: bool) -> list[Metric]:
        ts = f"task:{task}"
        m = self.last.get(task, {})
        base = self.base.get(task, {})
        out: list[Metric] = []
        for k in CUMULATIVE:
            out.append((ts, k, float(m.get(k, 0)) + base.get(k, 0)))
        for k in GAUGES:
            out.append((ts, k, float(m.get(k, 0))))
        for stream, n in (m.get("emitted_by_stream") or {}).items():
            out.append((ts, f"emitted:{stream}", float(n)))
        for key, share in (m.get("hot_keys") or {}).items():  # the last interval's
            out.append((ts, f"hot_key:{key}", float(share)))
        user = dict(base.get("user", {}))
        for name, n in (m.get("user") or {}).items():
            user[name] = user.get(name, 0) + n
        for name, n in user.items():
            out.append((ts, f"user:{name}", float(n)))
        out.append((ts, "restarts", float(self.restarts.get(task, 0))))
        out.append((ts, "exceptions", float(self.exceptions.get(task, 0))))
        out.append((ts, "connected", 1.0 if connected else 0.0))
        return out


class MetricsHost(Protocol):
    """What a metrics snapshot reads of its stream manager."""

    @property
    def container(self) -> int: ...

    @property
    def bytes_in(self) -> int: ...

    @property
    def bytes_out(self) -> int: ...

    @property
    def frames_in(self) -> int: ...

    @property
    def frames_out(self) -> int: ...

    @property
    def bp(self) -> Backpressure: ...

    @property
    def acks(self) -> Sized:
        """The pending tuple trees of its spouts."""
        ...

    @property
    def tasks(self) -> TaskMetrics: ...

    @property
    def local_tasks(self) -> set[int]: ...

    @property
    def conns(self) -> Mapping[int, InstanceConnection]: ...

    @property
    def peers(self) -> Mapping[int, PeerLink]: ...

    @property
    def staging(self) -> Staging: ...


def snapshot(stmgr: MetricsHost) -> list[Metric]:
    """Every metric of ``stmgr`` and its local tasks, now."""
    bp, thr = stmgr.bp.times()
    scope = f"container:{stmgr.container}"
    out: list[Metric] = [
        (scope, "bytes_in", float(stmgr.bytes_in)),
        (scope, "bytes_out", float(stmgr.bytes_out)),
        (scope, "batches_in", float(stmgr.frames_in)),
        (scope, "batches_out", float(stmgr.frames_out)),
        (scope, "buffer_bytes", float(buffered_bytes(stmgr))),
        (scope, "backpressure_ms", bp * 1000.0),
        (scope, "throttled_ms", thr * 1000.0),
        (scope, "pending_trees", float(len(stmgr.acks))),
    ]
    for task in sorted(stmgr.local_tasks):
        out += stmgr.tasks.task_metrics(task, task in stmgr.conns)
    return out


def buffered_bytes(stmgr: MetricsHost) -> int:
    """What waits to leave ``stmgr``: staged frames, its peer links' queues, and its
    instance connections' write buffers."""
    total = stmgr.staging.total_bytes() + sum(p.nbytes for p in stmgr.peers.values())
    for conn in stmgr.conns.values():
        if conn.transport is not None:
            total += conn.transport.get_write_buffer_size()
    return total
