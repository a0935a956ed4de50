"""heronpy's ``Bolt``, mapped onto ``headwater.Bolt``. No auto-ack, as in heronpy."""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from typing import Any

from headwater.common.api import Bolt as NativeBolt
from headwater.common.api import Context, Tuple

from ..component.base_component import BaseComponent
from ..component.component_spec import HeronComponentSpec
from ..stream import Stream
from ..topology_context import TopologyContext
from ..tuple import TupleHelper


class Bolt(BaseComponent, NativeBolt):
    """Override ``initialize``, ``process`` and ``process_tick`` as in heronpy."""

    def open(self, ctx: Context) -> None:
        self._attach(ctx)

    def _wrap(self, context: TopologyContext) -> None:
        super()._wrap(context)
        user_process = self.process

        def process(tup: Tuple) -> None:
            if not context.hook_exists:
                user_process(tup)
            else:
                started = time.perf_counter_ns()
                user_process(tup)
                context.invoke_hook_bolt_execute(tup, time.perf_counter_ns() - started)
            context.poll_metrics()

        self.process = process  # type: ignore[method-assign]

    def on_tick(self, tup: Tuple) -> None:
        self.process_tick(tup)
        if self._topology_context is not None:
            self._topology_context.poll_metrics()

    # -- heronpy API -------------------------------------------------------------
    def initialize(self, config: dict[str, Any], context: TopologyContext) -> None:
        pass

    def process(self, tup: Tuple) -> None:
        raise NotImplementedError("Bolt not implementing process() method.")

    def process_tick(self, tup: Tuple) -> None:
        pass

    def emit(
        self,
        tup: Sequence[Any],
        stream: str = Stream.DEFAULT_STREAM_ID,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        if self.delegate is not None:
            return self.delegate.emit(  # type: ignore[no-any-return]
                tup,
                stream=stream,
                anchors=anchors,
                direct_task=direct_task,
                need_task_ids=need_task_ids,
            )
        context = self._topology_context
        if context is None or not context.hook_exists:
            return self._ctx.emit(
                tup, stream, anchors=anchors, direct_task=direct_task, need_task_ids=need_task_ids
            )
        tasks = self._ctx.emit(
            tup, stream, anchors=anchors, direct_task=direct_task, need_task_ids=True
        )
        context.invoke_hook_emit(tup, stream, tasks)
        return tasks if need_task_ids else None

    def ack(self, tup: Tuple) -> None:
        if self.delegate is not None:
            self.delegate.ack(tup)
            return
        self._ctx.ack(tup)
        context = self._topology_context
        if context is not None and context.hook_exists:
            context.invoke_hook_bolt_ack(tup, _since_created_ns(tup))

    def fail(self, tup: Tuple) -> None:
        if self.delegate is not None:
            self.delegate.fail(tup)
            return
        self._ctx.fail(tup)
        context = self._topology_context
        if context is not None and context.hook_exists:
            context.invoke_hook_bolt_fail(tup, _since_created_ns(tup))

    @staticmethod
    def is_tick(tup: Tuple) -> bool:
        return tup.stream == TupleHelper.TICK_TUPLE_ID

    @classmethod
    def spec(
        cls,
        name: str | None = None,
        inputs: Any = None,
        par: int = 1,
        config: Mapping[str, Any] | None = None,
        optional_outputs: Sequence[Stream | str] | None = None,
    ) -> HeronComponentSpec:
        outputs = list(copy.copy(getattr(cls, "outputs", [])))
        if optional_outputs is not None:
            outputs.extend(optional_outputs)
        return HeronComponentSpec(name, cls, False, par, inputs, outputs, config)


def _since_created_ns(tup: Tuple) -> float:
    """How long ago the tuple was made (Heron: since it arrived; here: since it was emitted)."""
    return max(0.0, (time.time() - tup.creation_time) * 1e9)
