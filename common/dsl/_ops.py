"""The DSL's steps at run time (the fused components that run chains of them: ``_fused.py``).

Every record is a ``(key, value)`` pair (key None until ``key_by``). A chain
of steps with no repartition between them runs inside one instance: each
step hands its output straight to the next as a function call, with no
serialisation and no stream manager hop. Stateful steps keep their state
under their step name (``ctx.keyed_state(name)`` per key, ``ctx.state[name]``
for the rest), so checkpoints and restores need nothing else.

A step whose function raises on a record retries that step on that record
(``Context.retry_record``: ``topology.record.max.retries`` times), then sends
the record to the dead letters under the step's name, and the chain goes on
with the next record; the steps before it are not run again. Each step's
closure holds its own ``try``, which costs nothing until something raises (the
retry is a ``partial``: a lambda over the closure's arguments would make them
cells, paid on every record).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from .._exceptions import DeadLetter
from ..api import Context
from ._partition import partition_of
from ._windows import Assigner, WindowedReduce

Out = Callable[[Any, Any], None]
Side = Callable[[str, Any, Any], None]
Retry = Callable[[str, Callable[[], Any], Exception, Any], bool]


def _reraise(component: str, attempt: Callable[[], Any], error: Exception, record: Any) -> bool:
    raise error  # a context that cannot retry (a test's): the exception goes on up


def _now_ms() -> int:
    return int(time.time() * 1000)


class Op:
    """One step. ``process`` gets a record and calls ``out`` for each result."""

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        raise NotImplementedError

    @property
    def retry(self) -> Retry:
        """Retries a record this step raised on, then dead-letters it (``retry_record``)."""
        return getattr(self.ctx, "retry_record", _reraise)  # a user's bare test context

    def link(self, out: Out, side: Side) -> Out:
        """``process`` bound to what follows it in a chain: one call per record per step.

        A class that defines ``inline(out, side)`` beside its ``process`` gives a
        closure doing the same work inline, which saves a call and the attribute
        lookups on every record; a subclass that overrides ``process`` alone gets
        the generic call, so its ``process`` is never bypassed. Either way a record
        the step raises on goes to ``retry``.
        """
        owner = next(c for c in type(self).__mro__ if "process" in vars(c))
        inline = vars(owner).get("inline")
        if inline is not None:
            return inline(self, out, side)  # type: ignore[no-any-return]
        process, retry, name = self.process, self.retry, self.name

        def call(key: Any, value: Any) -> None:
            try:
                process(key, value, out, side)
            except Exception as exc:
                retry(name, partial(process, key, value, out, side), exc, value)

        return call

    def on_watermark(self, watermark: int, out: Out, side: Side) -> None:
        """Every task feeding this step has sent everything up to ``watermark``."""

    def on_time(self, out: Out, side: Side) -> None:
        """Called every tick (processing-time steps use it)."""


class MapOp(Op):
    def __init__(self, name: str, fn: Callable[[Any], Any]) -> None:
        super().__init__(name)
        self.fn = fn

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        out(key, self.fn(value))

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            out(key, fn(value))

        def call(key: Any, value: Any) -> None:
            try:
                out(key, fn(value))
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


class FlatMapOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        for v in list(self.fn(value)):
            out(key, v)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            for v in list(fn(value)):
                out(key, v)

        def call(key: Any, value: Any) -> None:
            try:
                # all or nothing: a generator that raises half way has emitted none of it
                for v in list(fn(value)):
                    out(key, v)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


class FilterOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        if self.fn(value):
            out(key, value)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            if fn(value):
                out(key, value)

        def call(key: Any, value: Any) -> None:
            try:
                if fn(value):
                    out(key, value)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


class KeyByOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        out(self.fn(value), value)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            out(fn(value), value)

        def call(key: Any, value: Any) -> None:
            try:
                out(fn(value), value)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


_KEPT = frozenset({str, bytes, int, bool, type(None)})
"""Key classes whose equal values have equal msgpack bytes (floats: 0.0 and -0.0 do not)."""


class PartitionedKeyByOp(KeyByOp):
    """``key_by(..., partitioned=True)``: sets the key and checks that it belongs here.

    A key that ``partition_of`` gives to another task of this component goes to
    the dead letters with the reason (never into this task's state, where it
    would be counted apart from its key's other records). The answer for a key
    of this task is kept with the key's class, so the check is one dict lookup
    per record; only for classes whose equal values pack to the same bytes
    (``_KEPT``): Python takes 2 and 2.0, 1 and True, 0.0 and -0.0, (1, "a") and
    (1.0, "a") for one dict key, which the fields grouping routes apart.
    """

    MAX_KEYS = 1 << 16  # keys whose answer is kept (forgotten all at once past it)

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.tasks = len(ctx.component_tasks(ctx.component))
        self.index = ctx.component_index
        self.mine: dict[Any, bool] = {}

    def check(self, key: Any) -> None:
        """Raise ``DeadLetter`` if ``key`` is another task's."""
        cls = key.__class__
        ok = self.mine.get(key)  # (an unhashable key raises: dead-lettered, as keyed state would)
        if ok is cls:
            return
        ok = partition_of(key, self.tasks) == self.index
        if cls in _KEPT:
            if len(self.mine) >= self.MAX_KEYS:
                self.mine.clear()
            self.mine[key] = cls if ok else False
        if not ok:
            raise DeadLetter(
                f"key {key!r} belongs to partition {partition_of(key, self.tasks)} of "
                f"{self.tasks}, not to task {self.index} of {self.name!r} (partitioned=True: "
                "split the input with headwater.dsl.partition_of)"
            )

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        k = self.fn(value)
        self.check(k)
        out(k, value)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name, mine, check = self.fn, self.retry, self.name, self.mine, self.check

        def again(key: Any, value: Any) -> None:
            k = fn(value)
            check(k)
            out(k, value)

        def call(key: Any, value: Any) -> None:
            try:
                k = fn(value)
                if mine.get(k) is not k.__class__:
                    check(k)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)
                return
            out(k, value)

        return call


class SinkOp(MapOp):
    """Calls ``fn`` with each value; counts them (user metric ``records:<step>``)."""

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.counter = f"records:{self.name}"

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.fn(value)
        self.ctx.incr(self.counter)

    def inline(self, out: Out, side: Side) -> Out:
        fn, incr, counter = self.fn, self.ctx.incr, self.counter
        retry, name = self.retry, self.name

        def again(value: Any) -> None:
            fn(value)
            incr(counter)

        def call(key: Any, value: Any) -> None:  # nothing follows a sink
            try:
                fn(value)
            except Exception as exc:
                retry(name, partial(again, value), exc, value)
                return
            incr(counter)

        return call


class LogOp(Op):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.ctx.log.info("%s: %r", self.name, value if key is None else (key, value))
        out(key, value)


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


OpFactory = Callable[[], Op]
