"""The DSL's own sources: a function called for records, a fixed collection."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..api import Context, Spout


class GeneratorSpout(Spout):
    """Calls ``fn()`` for records (None: nothing now), up to 64 a call. Not replayable."""

    BATCH = 64

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def next_tuple(self) -> bool | None:
        for _ in range(self.BATCH):
            value = self.fn()
            if value is None:
                return None
            self.ctx.emit([value])
        return None


class CollectionSpout(Spout):
    """Emits a fixed collection once, exactly once with checkpoints (its offset is state).

    Task ``i`` of ``n`` emits the items whose index is ``i`` modulo ``n``, in order.
    """

    BATCH = 256

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = list(items)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        n = len(ctx.component_tasks(ctx.component))
        self.mine = self.items[ctx.component_index :: n]
        self.state = ctx.state

    def exhausted(self) -> bool:
        return int(self.state.get("offset", 0)) >= len(self.mine)

    def next_tuple(self) -> None:
        offset = int(self.state.get("offset", 0))
        batch = self.mine[offset : offset + self.BATCH]
        for item in batch:
            self.ctx.emit([item])
        if batch:
            self.state["offset"] = offset + len(batch)
