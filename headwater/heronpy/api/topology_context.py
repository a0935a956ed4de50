"""heronpy's ``TopologyContext``, backed by the native ``Context``."""

from __future__ import annotations

from collections import namedtuple
from typing import Any

from headwater.common.api import Context

StreamId = namedtuple("StreamId", "id component_name")


class TopologyContext:
    def __init__(self, ctx: Context, topology: Any = None) -> None:
        self._ctx = ctx
        self._topology = topology
        self.task_hooks: list[Any] = []
        self.metrics: dict[str, Any] = {}

    def get_task_id(self) -> int:
        return self._ctx.task_id

    def get_component_id(self) -> str:
        return self._ctx.component

    def get_cluster_config(self) -> dict[str, Any]:
        return dict(self._ctx.config)

    def get_topology_name(self) -> str:
        return self._ctx.topology_name

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

    def register_metric(self, name: str, metric: Any, time_bucket_in_sec: int) -> None:
        self.metrics[name] = metric

    def add_task_hook(self, task_hook: Any) -> None:
        self.task_hooks.append(task_hook)

    def __repr__(self) -> str:
        return f"TopologyContext(component={self.get_component_id()!r}, task={self.get_task_id()})"
