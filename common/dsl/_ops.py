"""The DSL's steps at run time, and the fused components that run chains of them.

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
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, cast

from ..api import Bolt, BoundedSource, Context, Spout, SystemContext, Tuple
from ..api._stream import PUNCTUATION
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
        fn, get, put = self.fn, self.totals.get, self.totals.__setitem__
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


END_OF_TIME = 2**62  # the watermark of a source that has nothing more to send


class Tap:
    """Watermarks for a downstream windowed step: the highest timestamp this task has sent.

    The chain sends it on the step's watermark stream (to every task of the
    step), at most every ``EVERY`` records or ``EVERY_S`` seconds, and
    ``END_OF_TIME`` when a bounded source is done. The step's watermark is
    the lowest over all the tasks that feed it, so a task holding few keys
    still sees time move.
    """

    EVERY = 64
    EVERY_S = 0.1

    def __init__(self, timestamp: Callable[[Any], int], stream: str) -> None:
        self.timestamp, self.stream = timestamp, stream
        self.max: int | None = None
        self.sent: int | None = None
        self.count = 0
        self.at = 0.0

    def see(self, value: Any) -> bool:
        ts = int(self.timestamp(value))
        if self.max is None or ts > self.max:
            self.max = ts
        self.count += 1
        return self.count >= self.EVERY


class _Chain:
    """Runs ``ops`` in order: each op's output is the next op's input; the last emits."""

    def __init__(self, ops: Sequence[Op], ctx: Context, taps: Sequence[Tap] = ()) -> None:
        self.ctx = ctx
        self.taps = list(taps)
        for op in ops:
            op.open(ctx)
        emit = ctx.emitter()  # every record leaves by it: bound once

        def last(key: Any, value: Any) -> None:
            emit([key, value])

        if len(self.taps) == 1:  # the common case, one windowed step downstream
            see, send = self.taps[0].see, self.send_watermarks

            def last(key: Any, value: Any) -> None:
                emit([key, value])
                if see(value):
                    send()

        elif self.taps:
            plain = last

            def last(key: Any, value: Any) -> None:
                plain(key, value)
                due = False
                for tap in self.taps:
                    due = tap.see(value) or due
                if due:
                    self.send_watermarks()

        def side_of(op: Op) -> Side:
            def side(tag: str, key: Any, value: Any) -> None:
                ctx.emit([key, value], stream=f"{op.name}.{tag}")

            return side

        nxt: Out = last
        for op in reversed(ops[1:]):
            nxt = op.link(nxt, side_of(op))
        # what the first step's output goes to (a join drives its first step itself)
        self.after_first, self.side_of_first = nxt, side_of(ops[0]) if ops else None
        self.first = ops[0].link(nxt, side_of(ops[0])) if ops else last

    def send_watermarks(self, final: bool = False) -> None:
        now = time.monotonic()
        for tap in self.taps:
            wm = END_OF_TIME if final else tap.max
            if wm is not None and wm != tap.sent:
                self.ctx.emit([None, wm], stream=tap.stream)
                tap.sent, tap.count, tap.at = wm, 0, now

    def watermarks_due(self) -> bool:
        now = time.monotonic()
        return any(t.max != t.sent and now - t.at >= Tap.EVERY_S for t in self.taps)


TapSpec = tuple[Callable[[Any], int], str]  # (the downstream step's timestamp, stream)
# streams named wm:<step> carry watermarks to <step>; the emitter keeps them behind the data
# sent before them to the same task (they are its punctuation streams)
WATERMARKS = PUNCTUATION


class FusedBolt(Bolt):
    """A chain of steps fed by one or more upstream components.

    A chain that starts with a join gets ``sides``: (component, stream) of
    each input -> 0 (left) or 1 (right). ``taps`` send watermarks to the
    windowed steps downstream; a chain that starts with a windowed step takes
    the watermarks of every task feeding it and moves on the lowest.
    """

    def __init__(
        self,
        ops: Callable[[], Sequence[Op]],
        sides: dict[tuple[str, str], int] | None = None,
        taps: Sequence[TapSpec] = (),
    ) -> None:
        self._ops, self._sides, self._taps = ops, sides, taps

    def open(self, ctx: Context) -> None:
        ops = self._ops()
        chain = self._chain = _Chain(ops, ctx, [Tap(ts, stream) for ts, stream in self._taps])
        self.chain = chain.first
        self.head = ops[0]
        self.out, self.side = chain.after_first, chain.side_of_first
        self.join: Callable[[int, Any, Any], None] | None = None
        if self._sides is not None:
            head = ops[0]
            assert isinstance(head, JoinOp)
            out, side = self.out, self.side
            assert side is not None

            retry = head.retry

            def join(s: int, key: Any, value: Any) -> None:
                try:
                    head.process_side(s, key, value, out, side)
                except Exception as exc:
                    retry(
                        head.name, partial(head.process_side, s, key, value, out, side), exc, value
                    )

            self.join = join
        me = ctx.topology.component(ctx.component)
        self.wm_sources = sum(
            len(ctx.component_tasks(i.component))
            for i in me.inputs
            if i.stream.startswith(WATERMARKS)
        )
        self.wm_in: dict[int, int] = {}  # upstream task -> its watermark

    def process(self, tup: Tuple) -> None:
        self.process_values(tup.component, tup.stream, tup.task, [tup.values])
        # watermarks leave every Tap.EVERY records (in the chain) or on the tick

    def process_values(
        self, component: str, stream: str, task: int, entries: list[list[Any]]
    ) -> None:
        """``process`` for a frame's untracked tuples at once: the instance calls this
        instead of making a ``Tuple`` per record."""
        if self.wm_sources and stream.startswith(WATERMARKS):
            for values in entries:
                self._watermark(task, int(values[1]))
            return
        if self.join is not None:
            assert self._sides is not None
            join, side = self.join, self._sides[(component, stream)]
            for key, value in entries:
                join(side, key, value)
            return
        chain = self.chain
        for key, value in entries:
            chain(key, value)

    def _watermark(self, task: int, wm: int) -> None:
        if wm <= self.wm_in.get(task, -END_OF_TIME):
            return
        self.wm_in[task] = wm
        if len(self.wm_in) == self.wm_sources and self.side is not None:
            self.head.on_watermark(min(self.wm_in.values()), self.out, self.side)
            if self._chain.taps and min(self.wm_in.values()) >= END_OF_TIME:
                self._chain.send_watermarks(final=True)  # the end of input travels on

    def on_tick(self, tup: Tuple) -> None:
        if self.side is not None:
            self.head.on_time(self.out, self.side)
        if self._chain.taps and self._chain.watermarks_due():
            self._chain.send_watermarks()


class _SourceContext:
    """The wrapped source's view: everything of the real context, but emit feeds the chain."""

    def __init__(self, ctx: Context, feed: Callable[[Any], None]) -> None:
        self._ctx, self._feed = ctx, feed
        # the runtime's channel to the stmgr, as an attribute of its own: a source checks
        # ``isinstance(ctx, SystemContext)``, which from Python 3.12 looks attributes up
        # statically and so never sees what ``__getattr__`` forwards
        if isinstance(ctx, SystemContext):
            self.system = ctx.system

    def emit(self, values: Sequence[Any], stream: str = "default", **_: Any) -> None:
        self._feed(values[0] if len(values) == 1 else list(values))

    def emitter(self, stream: str = "default") -> Callable[[list[Any]], None]:
        return self.emit

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class FusedSpout(Spout):
    """A source spout whose records run through a chain of steps in the same instance.

    A source with ``exhausted()`` (a bounded one) sends the end of time as its
    watermark once it has nothing more.
    """

    def __init__(
        self,
        source: Callable[[], Spout],
        ops: Callable[[], Sequence[Op]],
        taps: Sequence[TapSpec] = (),
    ) -> None:
        self._source, self._ops, self._taps = source, ops, taps

    def open(self, ctx: Context) -> None:
        self._chain = _Chain(self._ops(), ctx, [Tap(ts, stream) for ts, stream in self._taps])
        chain = self._chain.first
        self.source = self._source()
        bounded = self.source if isinstance(self.source, BoundedSource) else None
        self._bounded = bounded if bounded is not None and callable(bounded.exhausted) else None
        self._fed = False

        def feed(value: Any) -> None:
            self._fed = True
            chain(None, value)

        self.source.open(cast(Context, _SourceContext(ctx, feed)))
        self._ended = False

    def next_tuple(self) -> bool:
        self._fed = False
        self.source.next_tuple()
        if self._chain.taps:
            self._watermarks()
        return self._fed  # records that ended in the chain (a sink) are work too

    def _watermarks(self) -> None:
        bounded = self._bounded
        if not self._ended and bounded is not None and bounded.exhausted():
            self._chain.send_watermarks(final=True)
            self._ended = True
        elif self._chain.watermarks_due():
            self._chain.send_watermarks()

    def activate(self) -> None:
        self.source.activate()

    def deactivate(self) -> None:
        self.source.deactivate()

    def on_restore(self, checkpoint_id: int) -> None:
        self.source.on_restore(checkpoint_id)

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self.source.on_checkpoint(checkpoint_id)

    def on_commit(self, checkpoint_id: int) -> None:
        self.source.on_commit(checkpoint_id)

    def close(self) -> None:
        source = getattr(self, "source", None)  # None: open failed before building it
        if source is not None:
            source.close()


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
