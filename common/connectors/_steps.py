"""A function of a topology's package run as a step, as the console's palette attaches one.

``FunctionStep`` runs ``fn`` on each record's values (a list), one of three ways:

- ``map``: ``fn(row) -> row`` (None: nothing is emitted);
- ``filter``: ``fn(row) -> bool``, the row emitted as it came when true;
- ``keyed``: ``fn(state, row) -> (state, rows)``, the shape of the IoT example's steps, with
  each key's state (the field at ``key``) in ``ctx.keyed_state``, checkpointed with the
  stream, so a keyed step is exactly once as the example's own are.

A step refuses a record by raising ``DeadLetter``, as any component does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..api import Bolt, Context, Tuple

KINDS = ("map", "filter", "keyed")


class FunctionStep(Bolt):
    def __init__(self, kind: str, fn: Callable[..., Any], key: int = 0) -> None:
        """``kind``: one of ``KINDS``; ``key``: the key field's position (``keyed``)."""
        self.kind, self.fn, self.key = kind, fn, key

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = ctx.keyed_state("step") if self.kind == "keyed" else None

    def process(self, tup: Tuple) -> None:
        row = list(tup.values)
        if self.kind == "map":
            out = self.fn(row)
            if out is not None:
                self.ctx.emit(list(out))
        elif self.kind == "filter":
            if self.fn(row):
                self.ctx.emit(row)
        else:
            assert self.state is not None
            k = row[self.key]
            new, rows = self.fn(self.state.get(k), row)
            self.state[k] = new
            for out in rows:
                self.ctx.emit(list(out))
