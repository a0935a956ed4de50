"""The DSL's keyed steps: a state per key, kept where that key's records meet.

``reduce_by_key`` (``ReduceByKeyOp``: a running total per key) and
``flat_map_by_key`` (``KeyedFlatMapOp``, also the base of a user's own keyed
step). Each keeps its state in ``ctx.keyed_state(name)`` under its step name,
so checkpoints and restores need nothing else. The ``Op`` base, and the retry
and dead letters of a record a step raises on: ``_ops.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from ..api import Context
from ._ops import Op, Out, Side


class ReduceByKeyOp(Op):
    """A running reduction per key: emits the key's new total for every record."""

    def __init__(self, name: str, fn: Callable[[Any, Any], Any]) -> None:
        super().__init__(name)
        self.fn = fn

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.totals = ctx.keyed_state(self.name)

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        acc = self.totals.get(key, _NONE)
        acc = value if acc is _NONE else self.fn(acc, value)
        self.totals[key] = acc
        out(key, acc)

    def inline(self, out: Out, side: Side) -> Out:
        fn, (get, put) = self.fn, self.totals.accessors()
        retry, name = self.retry, self.name

        def again(key: Any, value: Any) -> None:
            acc = get(key, _NONE)
            acc = value if acc is _NONE else fn(acc, value)
            put(key, acc)
            out(key, acc)

        def call(key: Any, value: Any) -> None:
            try:
                acc = get(key, _NONE)
                acc = value if acc is _NONE else fn(acc, value)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)
                return
            put(key, acc)
            out(key, acc)

        return call


_NONE = object()


class KeyedFlatMapOp(Op):
    """Per key: ``fn(state, value) -> (new_state, values)``; state None is no state yet."""

    def __init__(self, name: str, fn: Callable[[Any, Any], tuple[Any, Iterable[Any]]]) -> None:
        super().__init__(name)
        self.fn = fn

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.states = ctx.keyed_state(self.name)

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        new, values = self.fn(self.states.get(key), value)
        if new is None:
            self.states.pop(key, None)
        else:
            self.states[key] = new
        for v in values:
            out(key, v)
