"""heronpy's ``Spout``, mapped onto ``headwater.Spout``."""

from __future__ import annotations

import copy
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
        self._attach(ctx)

    def on_ack(self, tup_id: Any) -> None:
        self.ack(tup_id)

    def on_fail(self, tup_id: Any) -> None:
        self.fail(tup_id)

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
        return self._ctx.emit(
            tup, stream, tup_id=tup_id, direct_task=direct_task, need_task_ids=need_task_ids
        )

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
