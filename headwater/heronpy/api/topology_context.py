"""heronpy's ``TopologyContext``, backed by the native ``Context``.

Besides heronpy's interface it has the methods of Heron's context implementation
that components and hooks use: the ``invoke_hook_*`` calls (the component makes
them; latencies are given in nanoseconds and handed to hooks in milliseconds),
``get_metrics_collector`` and ``get_topology_pex_path`` (here: the topology file).
Registered metrics are reported with the task's metrics as ``user:<name>``
(``user:<name>/<key>`` for a multi-metric), see ``heronpy.api.metrics``.
"""

from __future__ import annotations

import os
import time
from collections import namedtuple
from typing import Any

from headwater.common.api import Context

from .metrics import CountMetric, MultiCountMetric
from .task_hook import (
    BoltAckInfo,
    BoltExecuteInfo,
    BoltFailInfo,
    EmitInfo,
    ITaskHook,
    SpoutAckInfo,
    SpoutFailInfo,
)

StreamId = namedtuple("StreamId", "id component_name")

_NS_PER_MS = 1_000_000.0


def _add(ctx: Context, counter: str, amount: Any) -> None:
    """Add to a user counter (a metric's amount may be a float: the runtime sums those too)."""
    ctx.incr(counter, amount)


class _Registered:
    """A metric read every ``bucket`` seconds; reports how far its value moved."""

    def __init__(self, name: str, metric: Any, bucket: float) -> None:
        self.name, self.metric, self.bucket = name, metric, bucket
        self.due = time.monotonic() + bucket
        self.reported: dict[str, float] = {}

    def flush(self, ctx: Context) -> None:
        value = self.metric.get_value_and_reset()
        items = value.items() if isinstance(value, dict) else [("", value)]
        for key, v in items:
            if isinstance(v, bool) or not isinstance(v, int | float):
                continue  # None (nothing reduced) or not a number: nothing to report
            counter = f"{self.name}/{key}" if key else self.name
            moved = v - self.reported.get(counter, 0)
            if moved:
                _add(ctx, counter, moved)
            self.reported[counter] = v


class TopologyContext:
    def __init__(self, ctx: Context, topology: Any = None) -> None:
        self._ctx = ctx
        self._topology = topology
        self.task_hooks: list[ITaskHook] = []
        self.metrics: dict[str, Any] = {}
        self._polled: list[_Registered] = []
        self._next_poll = float("inf")

    # -- where this task is ------------------------------------------------------------
    def get_task_id(self) -> int:
        return self._ctx.task_id

    def get_component_id(self) -> str:
        return self._ctx.component

    def get_cluster_config(self) -> dict[str, Any]:
        return dict(self._ctx.config)

    def get_topology_name(self) -> str:
        return self._ctx.topology_name

    def get_topology_pex_path(self) -> str | None:
        """The topology file this task loaded (Heron: its pex)."""
        return os.environ.get("HEADWATER_TOPOLOGY_FILE")

    def get_component_tasks(self, component_id: str) -> list[int]:
        return self._ctx.component_tasks(component_id)

    def get_sources(self, component_id: str) -> dict[StreamId, Any] | None:
        if self._topology is None:
            return None
        try:
            comp = self._topology.component(component_id)
        except KeyError:
            return None
        return {StreamId(i.stream, i.component): i.grouping for i in comp.inputs}

    def get_this_sources(self) -> dict[StreamId, Any] | None:
        return self.get_sources(self.get_component_id())

    # -- metrics -------------------------------------------------------------------------
    def register_metric(self, name: str, metric: Any, time_bucket_in_sec: float) -> None:
        if not isinstance(name, str) or not name:
            raise TypeError("a metric's name must be a non-empty str")
        if name in self.metrics:
            raise RuntimeError(f"metric {name!r} is already registered")
        if not hasattr(metric, "get_value_and_reset"):
            raise TypeError(f"metric {name!r} must be an IMetric (get_value_and_reset)")
        if not time_bucket_in_sec or time_bucket_in_sec <= 0:
            raise ValueError(f"metric {name!r}: the time bucket must be positive seconds")
        self.metrics[name] = metric
        ctx = self._ctx
        if isinstance(metric, CountMetric | MultiCountMetric):

            def sink(key: str, n: float) -> None:
                _add(ctx, f"{name}/{key}" if key else name, n)

            metric._sink = sink
            if isinstance(metric, MultiCountMetric):
                for key, m in metric.value.items():
                    sink(key, m.value)
            else:
                sink("", metric.value)
            return
        polled = _Registered(name, metric, float(time_bucket_in_sec))
        self._polled.append(polled)
        self._next_poll = min(self._next_poll, polled.due)

    def get_metrics_collector(self) -> TopologyContext:
        """What registers metrics (``register_metric(name, metric, time_bucket_in_sec)``)."""
        return self

    def poll_metrics(self, force: bool = False) -> None:
        """Read the metrics whose time bucket has passed (all of them with ``force``)."""
        now = time.monotonic()
        if not force and now < self._next_poll:
            return
        for m in self._polled:
            if force or now >= m.due:
                m.flush(self._ctx)
                m.due = now + m.bucket
        self._next_poll = min((m.due for m in self._polled), default=float("inf"))

    # -- task hooks ----------------------------------------------------------------------
    def add_task_hook(self, task_hook: ITaskHook) -> None:
        if not isinstance(task_hook, ITaskHook):
            raise TypeError(f"a task hook must be an ITaskHook, got {task_hook!r}")
        self.task_hooks.append(task_hook)

    @property
    def hook_exists(self) -> bool:
        return bool(self.task_hooks)

    def invoke_hook_prepare(self) -> None:
        for hook in self.task_hooks:
            hook.prepare(self.get_cluster_config(), self)

    def invoke_hook_cleanup(self) -> None:
        for hook in self.task_hooks:
            hook.clean_up()

    def invoke_hook_emit(self, values: Any, stream_id: str, out_tasks: Any) -> None:
        info = EmitInfo(values, stream_id, self.get_task_id(), out_tasks)
        for hook in self.task_hooks:
            hook.emit(info)

    def invoke_hook_spout_ack(self, message_id: Any, complete_latency_ns: float) -> None:
        info = SpoutAckInfo(message_id, self.get_task_id(), complete_latency_ns / _NS_PER_MS)
        for hook in self.task_hooks:
            hook.spout_ack(info)

    def invoke_hook_spout_fail(self, message_id: Any, fail_latency_ns: float) -> None:
        info = SpoutFailInfo(message_id, self.get_task_id(), fail_latency_ns / _NS_PER_MS)
        for hook in self.task_hooks:
            hook.spout_fail(info)

    def invoke_hook_bolt_execute(self, heron_tuple: Any, execute_latency_ns: float) -> None:
        info = BoltExecuteInfo(heron_tuple, self.get_task_id(), execute_latency_ns / _NS_PER_MS)
        for hook in self.task_hooks:
            hook.bolt_execute(info)

    def invoke_hook_bolt_ack(self, heron_tuple: Any, process_latency_ns: float) -> None:
        info = BoltAckInfo(heron_tuple, self.get_task_id(), process_latency_ns / _NS_PER_MS)
        for hook in self.task_hooks:
            hook.bolt_ack(info)

    def invoke_hook_bolt_fail(self, heron_tuple: Any, fail_latency_ns: float) -> None:
        info = BoltFailInfo(heron_tuple, self.get_task_id(), fail_latency_ns / _NS_PER_MS)
        for hook in self.task_hooks:
            hook.bolt_fail(info)

    def __repr__(self) -> str:
        return f"TopologyContext(component={self.get_component_id()!r}, task={self.get_task_id()})"
