"""The DSL's steps at run time, and the fused components that run chains of them.

Every record is a ``(key, value)`` pair (key None until ``key_by``). A chain
of steps with no repartition between them runs inside one instance: each
step hands its output straight to the next as a function call, with no
serialisation and no stream manager hop. Stateful steps keep their state
under their step name (``ctx.keyed_state(name)`` per key, ``ctx.state[name]``
for the rest), so checkpoints and restores need nothing else.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

from ..api import Bolt, Context, Spout, Tuple
from ._windows import Assigner, WindowedReduce

Out = Callable[[Any, Any], None]
Side = Callable[[str, Any, Any], None]


class Op:
    """One step. ``process`` gets a record and calls ``out`` for each result."""

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        raise NotImplementedError


class MapOp(Op):
    def __init__(self, name: str, fn: Callable[[Any], Any]) -> None:
        super().__init__(name)
        self.fn = fn

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        out(key, self.fn(value))


class FlatMapOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        for v in self.fn(value):
            out(key, v)


class FilterOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        if self.fn(value):
            out(key, value)


class KeyByOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        out(self.fn(value), value)


class SinkOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.fn(value)


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


_NONE = object()


class WindowOp(Op):
    """Event-time windows per key; emits ``{"key", "start", "end", "value"}`` when they fire."""

    def __init__(
        self,
        name: str,
        assigner: Assigner,
        timestamp: Callable[[Any], int],
        reduce: Callable[[Any, Any], Any],
        out_of_orderness: int,
        lateness: int,
    ) -> None:
        super().__init__(name)
        self.assigner, self.timestamp, self.reduce = assigner, timestamp, reduce
        self.out_of_orderness, self.lateness = out_of_orderness, lateness

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.w = WindowedReduce(self.assigner, self.reduce,
                                out_of_orderness=self.out_of_orderness, lateness=self.lateness,
                                windows=ctx.keyed_state(self.name),
                                meta=ctx.state.setdefault(f"step:{self.name}", {}))  # fmt: skip

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        def fired(r: list[Any]) -> None:
            out(r[0], {"key": r[0], "start": r[1], "end": r[2], "value": r[3]})

        def late(r: list[Any]) -> None:
            side("late", r[0], r[2])

        self.w.add(key, int(self.timestamp(value)), value, fired, late)


OpFactory = Callable[[], Op]


class _Chain:
    """Runs ``ops`` in order: each op's output is the next op's input; the last emits."""

    def __init__(self, ops: Sequence[Op], ctx: Context) -> None:
        self.ctx = ctx
        for op in ops:
            op.open(ctx)
        emit = ctx.emit

        def last(key: Any, value: Any) -> None:
            emit([key, value])

        def side_of(op: Op) -> Side:
            def side(tag: str, key: Any, value: Any) -> None:
                emit([key, value], stream=f"{op.name}.{tag}")

            return side

        nxt: Out = last
        for op in reversed(ops):
            nxt = _link(op, nxt, side_of(op))
        self.first = nxt


def _link(op: Op, out: Out, side: Side) -> Out:
    process = op.process

    def call(key: Any, value: Any) -> None:
        process(key, value, out, side)

    return call


class FusedBolt(Bolt):
    """A chain of steps fed by one or more upstream components."""

    def __init__(self, ops: Callable[[], Sequence[Op]]) -> None:
        self._ops = ops

    def open(self, ctx: Context) -> None:
        self.chain = _Chain(self._ops(), ctx).first

    def process(self, tup: Tuple) -> None:
        key, value = tup.values
        self.chain(key, value)


class _SourceContext:
    """The wrapped source's view: everything of the real context, but emit feeds the chain."""

    def __init__(self, ctx: Context, feed: Callable[[Any], None]) -> None:
        self._ctx, self._feed = ctx, feed

    def emit(self, values: Sequence[Any], stream: str = "default", **_: Any) -> None:
        self._feed(values[0] if len(values) == 1 else list(values))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class FusedSpout(Spout):
    """A source spout whose records run through a chain of steps in the same instance."""

    def __init__(self, source: Callable[[], Spout], ops: Callable[[], Sequence[Op]]) -> None:
        self._source, self._ops = source, ops

    def open(self, ctx: Context) -> None:
        chain = _Chain(self._ops(), ctx).first
        self.source = self._source()
        self.source.open(cast(Context, _SourceContext(ctx, lambda value: chain(None, value))))

    def next_tuple(self) -> None:
        self.source.next_tuple()

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
        self.source.close()


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

    def next_tuple(self) -> None:
        offset = int(self.state.get("offset", 0))
        batch = self.mine[offset : offset + self.BATCH]
        for item in batch:
            self.ctx.emit([item])
        if batch:
            self.state["offset"] = offset + len(batch)
