"""A source's fused chain: ``FusedSpout`` runs a chain of DSL steps behind a source.

The source emits into the chain (``_SourceContext``: the source's view of its context,
whose ``emit`` feeds the chain's first step); the chain's steps, taps and watermarks are
``_fused._Chain``'s, as for a ``FusedBolt``. What the source emits in one of its calls
(``next_tuple``, ``on_checkpoint``, ...) runs through the chain as one frame's records, at
the call's end or every ``GATHER`` records, so that a compiled chain loops over them and
emits its output in frames' worth (``_compile.py``), not a call and an emit per record;
nothing stays held once the call returned (a checkpoint or a watermark comes between calls),
nor when the source calls ``ctx.flush()``. A record the chain raises on is retried or
dead-lettered by its steps as before; an exception that escapes the chain comes out of the
source's emit that ran the held records (every 1,000th) or at the call's end, and ends the
instance as any exception of a source's does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ..api import BoundedSource, Context, Spout, SystemContext
from ..wire import column_rows
from ._compile import GATHER
from ._fused import END_OF_TIME, Tap, TapSpec, _Chain
from ._ops import Op


class _SourceContext:
    """The wrapped source's view: everything of the real context, but emit feeds the chain."""

    def __init__(
        self, ctx: Context, feed: Callable[[Any], None], run_held: Callable[[], None]
    ) -> None:
        self._ctx, self._feed, self._run_held = ctx, feed, run_held
        # the runtime's channel to the stmgr, as an attribute of its own: a source checks
        # ``isinstance(ctx, SystemContext)``, which from Python 3.12 looks attributes up
        # statically and so never sees what ``__getattr__`` forwards
        if isinstance(ctx, SystemContext):
            self.system = ctx.system

    def emit(self, values: Sequence[Any], stream: str = "default", **_: Any) -> None:
        self._feed(values[0] if len(values) == 1 else list(values))

    def emitter(self, stream: str = "default") -> Callable[[list[Any]], None]:
        return self.emit

    def emitter_all(self, stream: str = "default") -> Callable[[list[list[Any]]], None]:
        def feed_all(records: list[list[Any]]) -> None:
            for values in records:
                self.emit(values)

        return feed_all

    def emitter_columns(self, stream: str = "default") -> Callable[[list[list[Any]]], None]:
        def feed_columns(cols: list[list[Any]]) -> None:
            for values in column_rows(cols):
                self.emit(values)

        return feed_columns

    def flush(self) -> None:
        """What it emitted through the chain first, then the context's own ``flush`` (a
        ``SystemContext``'s: its emitted tuples out now; AttributeError elsewhere, as before)."""
        self._run_held()
        self._ctx.flush()  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class FusedSpout(Spout):
    """A source spout whose records run through a chain of steps in the same instance.

    A source with ``exhausted()`` (a bounded one) sends the end of time as its
    watermark once it has nothing more. ``own_time`` names the event-time steps
    fused in this chain (after a ``key_by(..., partitioned=True)``): their
    watermark is this task's, moved by their own records and, at the end of a
    bounded source, to the end of time.
    """

    def __init__(
        self,
        source: Callable[[], Spout],
        ops: Callable[[], Sequence[Op]],
        taps: Sequence[TapSpec] = (),
        own_time: Sequence[str] = (),
    ) -> None:
        self._source, self._ops, self._taps, self._own_time = source, ops, taps, own_time

    def open(self, ctx: Context) -> None:
        held: list[tuple[None, Any]] = []
        self._held = held
        self._chain = _Chain(self._ops(), ctx, [Tap(ts, stream) for ts, stream in self._taps])
        self._timed = [self._chain.links[name] for name in self._own_time]
        self.source = self._source()
        bounded = self.source if isinstance(self.source, BoundedSource) else None
        self._bounded = bounded if bounded is not None and callable(bounded.exhausted) else None
        self._fed = False

        hold = held.append

        def feed(value: Any) -> None:
            self._fed = True
            hold((None, value))
            if len(held) >= GATHER:  # a long call still meets backpressure as it goes
                self._run_held()

        self.source.open(cast(Context, _SourceContext(ctx, feed, self._run_held)))
        self._run_held()
        self._ended = False

    def _run_held(self) -> None:
        """What the source emitted since the last run, through the chain (never twice, even
        if the chain raises)."""
        held = self._held
        if held:
            entries = held.copy()
            del held[: len(entries)]
            self._chain.first_all(entries)

    def next_tuple(self) -> bool:
        self._fed = False
        try:
            try:
                self.source.next_tuple()
            finally:  # what it emitted before it raised runs too, as it did record by record
                self._run_held()
            if self._chain.taps or self._timed:
                self._watermarks()
        finally:
            self._chain.settle()
        return self._fed  # records that ended in the chain (a sink) are work too

    def _watermarks(self) -> None:
        bounded = self._bounded
        if not self._ended and bounded is not None and bounded.exhausted():
            for op, out, side in self._timed:  # the end of input closes every window
                op.on_watermark(END_OF_TIME, out, side)
            self._chain.send_watermarks(final=True)
            self._ended = True
        elif self._chain.watermarks_due():
            self._chain.send_watermarks()

    # a source may emit from any of its calls: what its records' sinks took is counted after each
    def _settled(self, call: Callable[..., None], *args: Any) -> None:
        try:
            try:
                call(*args)
            finally:
                self._run_held()
        finally:
            self._chain.settle()

    def activate(self) -> None:
        self._settled(self.source.activate)

    def deactivate(self) -> None:
        self._settled(self.source.deactivate)

    def on_restore(self, checkpoint_id: int) -> None:
        self._settled(self.source.on_restore, checkpoint_id)

    def on_checkpoint(self, checkpoint_id: int) -> None:
        self._settled(self.source.on_checkpoint, checkpoint_id)

    def on_commit(self, checkpoint_id: int) -> None:
        self._settled(self.source.on_commit, checkpoint_id)

    def close(self) -> None:
        source = getattr(self, "source", None)  # None: open failed before building it
        if source is not None:
            self._settled(source.close)
