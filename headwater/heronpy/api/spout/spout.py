"""heronpy's ``Spout``, mapped onto ``headwater.Spout``."""

from __future__ import annotations

import copy
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.common.api import Context
from headwater.common.api import Spout as NativeSpout

from ..component.base_component import BaseComponent
from ..component.component_spec import HeronComponentSpec
from ..stream import Stream
from ..topology_context import TopologyContext


class Spout(BaseComponent, NativeSpout):
    """Override ``initialize``, ``next_tuple``, ``ack``, ``fail`` as in heronpy."""

    # -- native contract -> heronpy methods ---------------------------------------
    def open(self, ctx: Context) -> None:
        self._emitted_at: dict[Any, deque[int]] = {}
        self._attach(ctx)

    def _wrap(self, context: TopologyContext) -> None:
        super()._wrap(context)
        user_next = self.next_tuple

        def next_tuple() -> Any:
            worked = user_next()
            context.poll_metrics()
            return worked

        self.next_tuple = next_tuple  # type: ignore[method-assign]

    def _latency_ns(self, tup_id: Any) -> int:
        times = self._emitted_at.get(tup_id)
        if not times:
            return 0
        started = times.popleft()
        if not times:
            del self._emitted_at[tup_id]
        return time.perf_counter_ns() - started

    def on_ack(self, tup_id: Any) -> None:
        self.ack(tup_id)
        context = self._topology_context
        if context is not None and context.hook_exists:
            context.invoke_hook_spout_ack(tup_id, self._latency_ns(tup_id))

    def on_fail(self, tup_id: Any) -> None:
        self.fail(tup_id)
        context = self._topology_context
        if context is not None and context.hook_exists:
            context.invoke_hook_spout_fail(tup_id, self._latency_ns(tup_id))

    # -- heronpy API -------------------------------------------------------------
    def initialize(self, config: dict[str, Any], context: TopologyContext) -> None:
        pass

    def next_tuple(self) -> None:
        raise NotImplementedError("Spout not implementing next_tuple() method")

    def ack(self, tup_id: Any) -> None:
        pass

    def fail(self, tup_id: Any) -> None:
        pass

    def emit(
        self,
        tup: Sequence[Any],
        tup_id: Any = None,
        stream: str = Stream.DEFAULT_STREAM_ID,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if self.delegate is not None:
            return self.delegate.emit(  # type: ignore[no-any-return]
                tup,
                tup_id=tup_id,
                stream=stream,
                direct_task=direct_task,
                need_task_ids=need_task_ids,
            )
        context = self._topology_context
        if context is None or not context.hook_exists:
            return self._ctx.emit(
                tup, stream, tup_id=tup_id, direct_task=direct_task, need_task_ids=need_task_ids
            )
        if tup_id is not None:
            self._emitted_at.setdefault(tup_id, deque()).append(time.perf_counter_ns())
        tasks = self._ctx.emit(
            tup, stream, tup_id=tup_id, direct_task=direct_task, need_task_ids=True
        )
        context.invoke_hook_emit(tup, stream, tasks)
        return tasks if need_task_ids else None

    @classmethod
    def spec(
        cls,
        name: str | None = None,
        par: int = 1,
        config: Mapping[str, Any] | None = None,
        optional_outputs: Sequence[Stream | str] | None = None,
    ) -> HeronComponentSpec:
        outputs = list(copy.copy(getattr(cls, "outputs", [])))
        if optional_outputs is not None:
            outputs.extend(optional_outputs)
        return HeronComponentSpec(name, cls, True, par, None, outputs, config)
