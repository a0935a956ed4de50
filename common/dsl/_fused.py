"""The fused components: a chain of DSL steps run inside one instance.

``FusedBolt`` runs a chain on what arrives (a frame of untracked records at
once, ``process_values``, or as columns, ``process_columns``); ``FusedSpout``
(``_fused_source.py``) runs one behind a source. A chain
(``_Chain``) links its steps' closures so each calls the next directly, with
``Tap`` sending watermarks for a windowed step downstream.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any

from ..api import Bolt, Context, Tuple
from ..api._stream import PUNCTUATION
from ._compile import Compiled, Emit, compilable, compile_run
from ._ops import Op, Out, Side
from ._window_ops import JoinOp

END_OF_TIME = 2**62  # the watermark of a source that has nothing more to send


def _no_records(value: Any) -> int:
    raise AssertionError("an end-only tap (no timestamp) sees no records")


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
    # A tap without a timestamp carries the end of time alone: for a chain an exchange away
    # from its source, between it and a window further on (``_build._end_of_input_paths``).

    def __init__(self, timestamp: Callable[[Any], int] | None, stream: str) -> None:
        self.timestamp, self.stream = timestamp, stream
        # what ``see`` calls, never None there (no check per record): the chain wires
        # ``see`` only for a tap with a timestamp
        self._stamp: Callable[[Any], int] = timestamp if timestamp is not None else _no_records
        self.max: int | None = None
        self.sent: int | None = None
        self.count = 0
        self.at = 0.0

    def see(self, value: Any) -> bool:
        try:
            ts = int(self._stamp(value))
        except Exception:
            # no time: the windowed step, whose timestamp this is, dead-letters the record
            # itself; here it moves nothing (a raise would fail the step that emitted it)
            return False
        if self.max is None or ts > self.max:
            self.max = ts
        self.count += 1
        return self.count >= self.EVERY


def _each(first: Out, entries: Iterable[Sequence[Any]]) -> None:
    for key, value in entries:
        first(key, value)


class _Chain:
    """Runs ``ops`` in order: each op's output is the next op's input; the last emits.
    A run of consecutive steps that ``_compile`` knows is one generated function; the
    other steps are closures linked between (``Op.link``)."""

    def __init__(self, ops: Sequence[Op], ctx: Context, taps: Sequence[Tap] = ()) -> None:
        self.ctx = ctx
        self.taps = list(taps)
        for op in ops:
            op.open(ctx)
        emit = ctx.emitter()  # every record leaves by it: bound once
        timed = [t for t in self.taps if t.timestamp is not None]  # end-only taps see none

        def last(key: Any, value: Any) -> None:
            emit([key, value])

        end: Emit | None  # the chain's end, for a compiled run reaching it
        if not timed:  # no tap sees records: a run gathers a frame's, and emits them at once
            end = Emit(emit, emit_columns=ctx.emitter_columns())
        elif len(timed) == 1:  # the common case, one windowed step downstream
            see, send = timed[0].see, self.send_watermarks
            end = Emit(emit, see, send)

            def last(key: Any, value: Any) -> None:
                emit([key, value])
                if see(value):
                    send()

        else:
            plain, end = last, None

            def last(key: Any, value: Any) -> None:
                plain(key, value)
                due = False
                for tap in timed:
                    due = tap.see(value) or due
                if due:
                    self.send_watermarks()

        def side_of(op: Op) -> Side:
            def side(tag: str, key: Any, value: Any) -> None:
                ctx.emit([key, value], stream=f"{op.name}.{tag}")

            return side

        # built from the end: ``nxt`` is where the output of the step at hand goes
        nxt: Out = last
        # each step with what its output goes to (steps whose watermark is driven here)
        self.links: dict[str, tuple[Op, Out, Side]] = {}
        self.compiled: list[Compiled] = []
        run: list[Op] = []  # compilable steps, until the run's first is found

        def close_run() -> None:
            nonlocal nxt
            if not run:
                return
            outs, sides, rest = [], [], nxt  # a linked chain too: for retries, watermarks
            for op in reversed(run):
                outs.append(rest)
                sides.append(side_of(op))
                rest = op.link(rest, sides[-1])
            outs.reverse()
            sides.reverse()
            compiled = compile_run(run, outs, sides, end if nxt is last and end else nxt)
            self.compiled.append(compiled)
            for op, out, side in zip(run, outs, sides, strict=True):
                self.links[op.name] = (op, out, side)
            nxt = compiled.call
            run.clear()

        for op in reversed(ops):
            if compilable(op):
                run.insert(0, op)
                continue
            close_run()
            self.links[op.name] = (op, nxt, side_of(op))
            nxt = op.link(nxt, self.links[op.name][2])
        close_run()
        # a frame's records at once: the compiled run's own loop when the chain starts with one
        first = nxt
        head = self.compiled[-1] if self.compiled and self.compiled[-1].call is first else None
        self.first_all: Callable[[Iterable[Sequence[Any]]], None] = (
            head.call_all if head is not None else partial(_each, first)
        )
        self.first_columns: Callable[[list[Any], list[Any]], None] = (
            head.call_columns if head is not None else self._columns_as_rows
        )
        if ops and hasattr(ops[0], "process_frame"):  # a scoring step: the frame whole
            self.first_all = partial(ops[0].process_frame, self.links[ops[0].name][1])
            self.first_columns = self._columns_as_rows
        # what the first step's output goes to (a join drives its first step itself)
        self.after_first: Out = self.links[ops[0].name][1] if ops else last
        self.side_of_first: Side | None = self.links[ops[0].name][2] if ops else None
        self.first = nxt

    def _columns_as_rows(self, keys: list[Any], values: list[Any]) -> None:
        self.first_all(zip(keys, values, strict=True))

    def settle(self) -> None:
        """Count what the compiled runs' sinks took (after each frame, tick and source call)."""
        for compiled in self.compiled:
            compiled.settle()

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


TapSpec = tuple[Callable[[Any], int] | None, str]  # (the downstream step's timestamp, stream)
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
        self.chain_all = chain.first_all
        self.chain_columns = chain.first_columns
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
        self.ctx = ctx
        # the components whose tasks send this chain watermarks; their tasks are looked up
        # as each watermark comes (a rescale upstream gives them other tasks, the context
        # other ids, while this instance runs on)
        self.wm_components = [i.component for i in me.inputs if i.stream.startswith(WATERMARKS)]
        self.wm_in: dict[int, int] = {}  # upstream task -> its watermark
        self.wm_low = -END_OF_TIME  # the watermark this chain moved on to last

    def process(self, tup: Tuple) -> None:
        self.process_values(tup.component, tup.stream, tup.task, [tup.values])
        # watermarks leave every Tap.EVERY records (in the chain) or on the tick

    def process_values(
        self, component: str, stream: str, task: int, entries: Iterable[Sequence[Any]]
    ) -> None:
        """``process`` for a frame's untracked tuples at once: the instance calls this
        instead of making a ``Tuple`` per record. ``entries`` is walked once, in order."""
        try:
            if self.wm_components and stream.startswith(WATERMARKS):
                for values in entries:
                    self._watermark(task, int(values[1]))
            elif self.join is not None:
                assert self._sides is not None
                join, side = self.join, self._sides[(component, stream)]
                for key, value in entries:
                    join(side, key, value)
            else:
                self.chain_all(entries)
        finally:
            self._chain.settle()

    def process_columns(
        self, component: str, stream: str, task: int, columns: list[list[Any]]
    ) -> None:
        """``process_values`` for a frame as columns: its tuples walked with ``zip``, no
        list made per tuple (a chain's compiled first run takes the two columns itself)."""
        if len(columns) != 2 or self.join is not None or stream.startswith(WATERMARKS):
            self.process_values(component, stream, task, zip(*columns, strict=True))
            return
        try:
            self.chain_columns(*columns)
        finally:
            self._chain.settle()

    def _watermark(self, task: int, wm: int) -> None:
        """Move on to the lowest watermark of the tasks feeding this chain now, once each
        has sent one: a retired task's no longer counts, a new one's is awaited (and kept
        if it comes before this instance switches to the revision that has the task)."""
        wm_in = self.wm_in
        if wm <= wm_in.get(task, -END_OF_TIME):
            return
        wm_in[task] = wm
        sources = {t for c in self.wm_components for t in self.ctx.component_tasks(c)}
        if self.side is None or not sources.issubset(wm_in):
            return
        low = min(wm_in[t] for t in sources)
        if low <= self.wm_low:
            return
        self.wm_low = low
        self.head.on_watermark(low, self.out, self.side)
        if self._chain.taps and low >= END_OF_TIME:
            self._chain.send_watermarks(final=True)  # the end of input travels on

    def on_tick(self, tup: Tuple) -> None:
        try:
            if self.side is not None:
                self.head.on_time(self.out, self.side)
            if self._chain.taps and self._chain.watermarks_due():
                self._chain.send_watermarks()
        finally:
            self._chain.settle()
