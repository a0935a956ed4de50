"""heronpy's ``Bolt``, mapped onto ``headwater.Bolt``. No auto-ack, as in heronpy."""

from __future__ import annotations

import copy
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

    def on_tick(self, tup: Tuple) -> None:
        self.process_tick(tup)

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
        return self._ctx.emit(
            tup, stream, anchors=anchors, direct_task=direct_task, need_task_ids=need_task_ids
        )

    def ack(self, tup: Tuple) -> None:
        self._ctx.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self._ctx.fail(tup)

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
