"""A ``Sample`` for the health manager: a topology master's metrics view and the running plan.

The tasks' counters come from ``common/control/_views.metrics`` ("tasks": {id: {"component",
"executed", "emitted", "received", "busy_ns", "backpressure_ms", "in_queue_frames",
"uptime_ns", "hot_key:<key>", ...}}); the components from the running revision's whole topology (its
parallelism, its inputs with their grouping kinds, spouts as sources, and those placed on
the agents marked ``edge``). A task that has not reported at all yet (no ``executed``: one a
rescale just started) is left out: read as zeros, it showed as an idle sibling beside the
others (a false skew); a counter a reporting task has not sent reads 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from headwater.common.api import Topology
from headwater.common.health._model import ComponentInfo, Sample, TaskSample

_HOT = "hot_key:"


def components_of(topology: Topology) -> dict[str, ComponentInfo]:
    """Each component of ``topology`` (the whole one: edge and cloud) as the manager reads it."""
    return {
        c.name: ComponentInfo(
            name=c.name,
            parallelism=c.parallelism,
            inputs=tuple((i.component, i.grouping.kind) for i in c.inputs),
            source=c.kind == "spout",
            edge=c.placement.is_edge,
        )
        for c in topology.components
    }


def _number(values: Mapping[str, Any], key: str) -> float:
    value = values.get(key, 0.0)
    return float(value) if isinstance(value, int | float) else 0.0


def task_samples(view: Mapping[str, Any]) -> dict[int, TaskSample]:
    """The tasks of a metrics view, by task id (entries that are not a task's are skipped)."""
    out: dict[int, TaskSample] = {}
    for key, values in (view.get("tasks") or {}).items():
        if not str(key).isdigit() or not isinstance(values, Mapping) or "executed" not in values:
            continue  # not a task's, or a task that has not reported yet (a new one starting)
        hot = sorted(
            ((k[len(_HOT) :], _number(values, k)) for k in values if k.startswith(_HOT)),
            key=lambda kv: (-kv[1], kv[0]),
        )
        out[int(key)] = TaskSample(
            task=int(key),
            component=str(values.get("component", "")),
            executed=_number(values, "executed"),
            emitted=_number(values, "emitted"),
            received=_number(values, "received"),
            busy_ns=_number(values, "busy_ns"),
            backpressure_ms=_number(values, "backpressure_ms"),
            in_queue_frames=_number(values, "in_queue_frames"),
            uptime_ns=_number(values, "uptime_ns"),
            hot_keys=tuple(hot),
        )
    return out


def build_sample(
    topology: str, revision: int, at: float, view: Mapping[str, Any], whole: Topology
) -> Sample:
    """One reading of ``topology`` at revision ``revision`` (``at``: monotonic seconds)."""
    return Sample(
        topology=topology,
        revision=revision,
        at=at,
        components=components_of(whole),
        tasks=task_samples(view),
    )
