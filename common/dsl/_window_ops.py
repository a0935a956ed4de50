"""The DSL's windowed steps: ``window`` (``WindowOp``; ``KeyClockWindowOp`` for
``clock="key"``) and ``join`` (``JoinOp``), per key, and ``KeyClockWindowBolt``, the
``clock="key"`` window as a component for the component API.

Both hand their records to a ``WindowedReduce`` (``_windows.py``: the
assigners and the per-key window state machine) whose windows are the step's
keyed state (``ctx.keyed_state(name)``) and whose watermark is in
``ctx.state["step:<name>"]``, and emit what fires: a window as ``{"key",
"start", "end", "value"}``, a join as its function's results. In event time a
step's watermark moves with the records it sees and the watermarks from
upstream (``on_watermark``); in processing time (no timestamp function) the
clock is the watermark, moved every tick (``on_time``). A record whose windows
are gone goes to the step's ``late`` side output. A ``clock="key"`` window
(``KeyClockWindows``) has no watermark: each key's records move its own clock, its
windows are its keyed state alone, and nothing is late. The ``Op`` base, and the
retry and dead letters of a record a step raises on: ``_ops.py``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ..api import Bolt, Context, Tuple
from ._ops import Op, Out, Side
from ._windows import Assigner, KeyClockWindows, Tumbling, WindowedReduce, fold_first


def _now_ms() -> int:
    return int(time.time() * 1000)


class WindowOp(Op):
    """Event-time windows per key; emits ``{"key", "start", "end", "value"}`` when they fire."""

    def __init__(
        self,
        name: str,
        assigner: Assigner,
        timestamp: Callable[[Any], int] | None,
        reduce: Callable[[Any, Any], Any],
        out_of_orderness: int,
        lateness: int,
        first: Callable[[Any], Any] | None = None,
        merge: Callable[[Any, Any], Any] | None = None,
    ) -> None:
        super().__init__(name)
        self.assigner, self.timestamp, self.reduce = assigner, timestamp, reduce
        self.out_of_orderness, self.lateness = out_of_orderness, lateness
        self.first, self.merge = first, merge

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.w = WindowedReduce(
            self.assigner,
            self.reduce,
            out_of_orderness=self.out_of_orderness,
            lateness=self.lateness,
            windows=ctx.keyed_state(self.name),
            meta=ctx.state.setdefault(f"step:{self.name}", {}),
            first=self.first,
            merge=self.merge,
        )

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.inline(out, side)(key, value)

    def inline(self, out: Out, side: Side) -> Out:
        def late(r: list[Any]) -> None:
            side("late", r[0], r[2])

        add, fired, timestamp = self.w.add, self._fired(out), self.timestamp
        retry, name = self.retry, self.name
        if timestamp is None:

            def again_now(key: Any, value: Any) -> None:
                add(key, _now_ms(), value, fired, late)

            def call(key: Any, value: Any) -> None:
                try:
                    add(key, _now_ms(), value, fired, late)
                except Exception as exc:
                    retry(name, partial(again_now, key, value), exc, value)

        else:

            def again(key: Any, value: Any) -> None:
                add(key, int(timestamp(value)), value, fired, late)

            def call(key: Any, value: Any) -> None:
                try:
                    add(key, int(timestamp(value)), value, fired, late)
                except Exception as exc:
                    retry(name, partial(again, key, value), exc, value)

        return call

    def _fired(self, out: Out) -> Callable[[list[Any]], None]:
        def fired(r: list[Any]) -> None:
            out(r[0], {"key": r[0], "start": r[1], "end": r[2], "value": r[3]})

        return fired

    def on_time(self, out: Out, side: Side) -> None:
        """Processing time: the clock is the watermark."""
        if self.timestamp is None:
            self.w.advance(_now_ms(), self._fired(out))

    def on_watermark(self, watermark: int, out: Out, side: Side) -> None:
        self.w.advance(watermark - self.out_of_orderness, self._fired(out))


def _window(r: list[Any]) -> dict[str, Any]:
    return {"key": r[0], "start": r[1], "end": r[2], "value": r[3]}


class KeyClockWindowOp(Op):
    """``window(..., clock="key")``: tumbling windows closed by each key's own clock
    (``KeyClockWindows``); emits ``{"key", "start", "end", "value"}`` as one closes."""

    def __init__(
        self,
        name: str,
        assigner: Tumbling,
        timestamp: Callable[[Any], int],
        reduce: Callable[[Any, Any], Any],
        first: Callable[[Any], Any] | None = None,
    ) -> None:
        super().__init__(name)
        self.assigner, self.timestamp, self.reduce, self.first = assigner, timestamp, reduce, first

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.w = KeyClockWindows(
            self.assigner, self.reduce, windows=ctx.keyed_state(self.name), first=self.first
        )

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.inline(out, side)(key, value)

    def inline(self, out: Out, side: Side) -> Out:
        add, timestamp, retry, name = self.w.add, self.timestamp, self.retry, self.name

        def closed(r: list[Any]) -> None:
            out(r[0], _window(r))

        def again(key: Any, value: Any) -> None:
            add(key, int(timestamp(value)), value, closed)

        def call(key: Any, value: Any) -> None:
            try:
                add(key, int(timestamp(value)), value, closed)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


def _row(window: dict[str, Any]) -> list[Any]:
    return [window["key"], window["start"], window["end"], window["value"]]


class KeyClockWindowBolt(Bolt):
    """The DSL's ``window(name, Tumbling(size), timestamp=..., clock="key").aggregate(...)``
    as a component, for a topology written with the component API.

    Its input must be fields-grouped on what ``key(values)`` reads (a key's tuples meet
    on one task). Each tuple's values (a list) are a record: ``timestamp(values)`` its
    event time, ``add(acc, values)`` folds it into its window's accumulator from
    ``zero()``. A key's window closes on the key's first record of another window (see
    ``headwater.common.dsl._windows``); the bolt then emits ``result(window)``, the
    window as ``{"key", "start", "end", "value"}`` (default: ``[key, start, end,
    value]``), to be declared as the component's ``outputs``. The windows are keyed
    state under ``name`` (checkpointed with the stream: exactly once); a tuple that
    raises changes nothing and follows the runtime's retries and dead letters.
    """

    def __init__(
        self,
        name: str,
        assigner: Tumbling,
        *,
        key: Callable[[list[Any]], Any],
        timestamp: Callable[[list[Any]], int],
        zero: Callable[[], Any],
        add: Callable[[Any, list[Any]], Any],
        result: Callable[[dict[str, Any]], list[Any]] = _row,
    ) -> None:
        KeyClockWindows(assigner, add)  # refuses what it cannot run, before any task starts
        self.name, self.assigner, self.key, self.timestamp = name, assigner, key, timestamp
        self.zero, self.add, self.result = zero, add, result

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.w = KeyClockWindows(
            self.assigner,
            self.add,
            windows=ctx.keyed_state(self.name),
            first=partial(fold_first, self.zero, self.add),
        )

    def process(self, tup: Tuple) -> None:
        values = list(tup.values)
        self.w.add(self.key(values), int(self.timestamp(values)), values, self._closed)

    def _closed(self, r: list[Any]) -> None:
        self.ctx.emit(self.result(_window(r)))


class JoinOp(Op):
    """Window join of two keyed streams: at each window's firing, pairs per key.

    ``how``: ``inner`` (pairs only), ``left`` (also each left record with no
    right: ``fn(left, None)``), ``right`` (each right with no left: ``fn(None,
    right)``), ``outer`` (both). Emits ``fn``'s results with the key (as a
    window dict ``{"key", "start", "end", "value"}`` with ``with_window``).
    """

    def __init__(
        self,
        name: str,
        assigner: Assigner,
        timestamps: tuple[Callable[[Any], int], Callable[[Any], int]] | None,
        fn: Callable[[Any, Any], Any],
        how: str,
        out_of_orderness: int,
        lateness: int,
        with_window: bool = False,
    ) -> None:
        super().__init__(name)
        self.assigner, self.timestamps, self.fn, self.how = assigner, timestamps, fn, how
        self.shape = _windowed if with_window else _bare
        self.out_of_orderness, self.lateness = out_of_orderness, lateness

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.w = WindowedReduce(
            self.assigner,
            _concat_sides,
            out_of_orderness=self.out_of_orderness,
            lateness=self.lateness,
            windows=ctx.keyed_state(self.name),
            meta=ctx.state.setdefault(f"step:{self.name}", {}),
        )

    def process_side(self, side: int, key: Any, value: Any, out: Out, sides: Side) -> None:
        def late(r: list[Any]) -> None:
            sides("late", r[0], r[2])

        acc = ([value], []) if side == 0 else ([], [value])
        ts = _now_ms() if self.timestamps is None else int(self.timestamps[side](value))
        self.w.add(key, ts, acc, self._fired(out), late)

    def on_time(self, out: Out, side: Side) -> None:
        if self.timestamps is None:  # processing time: the clock is the watermark
            self.w.advance(_now_ms(), self._fired(out))

    def on_watermark(self, watermark: int, out: Out, side: Side) -> None:
        self.w.advance(watermark - self.out_of_orderness, self._fired(out))

    def _fired(self, out: Out) -> Callable[[list[Any]], None]:
        def fired(r: list[Any]) -> None:
            lefts, rights = r[3]
            fn = self.fn
            shape = self.shape
            for left in lefts:
                for right in rights:
                    out(r[0], shape(r, fn(left, right)))
            if self.how in ("left", "outer") and not rights:
                for left in lefts:
                    out(r[0], shape(r, fn(left, None)))
            if self.how in ("right", "outer") and not lefts:
                for right in rights:
                    out(r[0], shape(r, fn(None, right)))

        return fired

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        raise TypeError("a join takes records from its two inputs only")


def _bare(r: list[Any], result: Any) -> Any:
    return result


def _windowed(r: list[Any], result: Any) -> Any:
    return {"key": r[0], "start": r[1], "end": r[2], "value": result}


def _concat_sides(a: tuple[list[Any], list[Any]], b: tuple[list[Any], list[Any]]) -> Any:
    return (a[0] + b[0], a[1] + b[1])
