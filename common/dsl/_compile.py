"""A run of simple steps compiled into one function: no call between steps.

A chain of closures (``Op.link``) costs a Python call per step per record, and
a word count's sender spends more in those calls than in its own functions.
``compile_run`` writes one function for a run of consecutive steps of the
kinds in ``COMPILED`` (map, flat_map, filter, key_by, reduce_by_key, sink):
each step's work is a few lines of its body, a ``flat_map`` a loop around the
rest, and the run's end calls what follows it (or emits, when the run ends the
chain). A ``reduce_by_key`` writes its keyed state inline (``KeyedState.put_parts``:
the dict, the keys changed since the last snapshot, the keys of mutable values), as
``KeyedState.accessors``' ``put`` does with a call; a state that notes nothing (a task
that never snapshots: ``UntrackedKeyedState``) is written with no note at all. A frame that
comes as two columns (``run_columns(keys, values)``) into a run that starts with a
``reduce_by_key`` over a noting state marks its keys changed with one set update after the
frame instead of one add per record.

Behaviour is the steps' own, record for record: each step's user function sits
in a ``try`` of its own, and a record it raises on goes to the step's retry
with the step's ``process`` bound to the *uncompiled* rest of the chain (as
``Op.link`` does), then on to the next record (or the next element of a
``flat_map``'s output). A sink's records are counted in a local, added to a cell
when the frame's loop ends, which the chain adds to the user counter
``records:<step>`` after each frame (``settle``), not with a call per record.

A run that ends the chain gathers its output records and emits them together
(``Emit.emit_columns``: a frame's keys and values as two columns, up to ``GATHER``
at a time), unless a downstream window's tap must see each as it leaves; a retry
first emits what was gathered, so records leave in the linked chain's order. One
difference stays: an emit that raises (a custom grouping's error) does so when the
gathered records leave, after the steps ran for the records that follow it, not at
its own record. Either way the task fails and restarts from its last checkpoint.

The source is made from fixed templates over step indexes only: no step name,
value or user text is ever part of it (they are bound in the function's
namespace), so nothing a pipeline says can change the code that runs.
"""

from __future__ import annotations

import linecache
import weakref
from collections.abc import Callable, Iterable, Sequence
from contextlib import suppress
from functools import partial
from itertools import count
from typing import Any

from ..api._state import IMMUTABLE
from ._keyed_ops import _NONE, ReduceByKeyOp
from ._ops import FilterOp, FlatMapOp, KeyByOp, MapOp, Op, Out, Side, SinkOp

COMPILED: frozenset[type[Op]] = frozenset(
    {MapOp, FlatMapOp, FilterOp, KeyByOp, ReduceByKeyOp, SinkOp}
)
"""Step classes compiled as they are (a subclass may change ``process``: it is linked)."""

_serial = count()


def compilable(op: Op) -> bool:
    return type(op) in COMPILED


class Emit:
    """The end of a chain, for a run that reaches it: ``emit([key, value])``, then, with
    ``see``, ``send()`` when ``see(value)`` says watermarks are due. With ``emit_columns``
    (and no ``see``), a run gathers its output records' keys and values in two lists and
    emits them together, in order (``Context.emitter_columns``)."""

    def __init__(
        self,
        emit: Callable[[list[Any]], None],
        see: Callable[[Any], bool] | None = None,
        send: Callable[[], None] | None = None,
        emit_columns: Callable[[list[list[Any]]], None] | None = None,
    ) -> None:
        self.emit, self.see, self.send = emit, see, send
        self.emit_columns = emit_columns if see is None else None


class Compiled:
    """A compiled run: ``call(key, value)`` runs it for one record, ``call_all(entries)`` for
    a frame's, ``call_columns(keys, values)`` for a frame's as two columns; ``settle()`` adds
    the records its sinks took since the last call to their counters."""

    def __init__(
        self,
        call: Out,
        call_all: Callable[[Iterable[Sequence[Any]]], None],
        call_columns: Callable[[list[Any], list[Any]], None],
        sinks: list[tuple[SinkOp, list[int]]],
    ) -> None:
        self.call, self.call_all, self.call_columns = call, call_all, call_columns
        self._sinks = sinks

    def settle(self) -> None:
        for op, cell in self._sinks:
            if cell[0]:
                n, cell[0] = cell[0], 0
                op.ctx.incr(op.counter, n)


def compile_run(
    ops: Sequence[Op], outs: Sequence[Out], sides: Sequence[Side], end: Out | Emit
) -> Compiled:
    """Functions for ``ops`` (each ``compilable``, each open): ``run(key, value)`` for one
    record, ``run_all(entries)`` for a frame's ``[key, value]`` records (the same body in a
    loop: no call per record), ``run_columns(keys, values)`` for a frame's two columns.

    ``outs[i]``: what ``ops[i]``'s output goes to in the uncompiled chain (a retry's
    attempt runs the rest of the chain through it); ``sides[i]``: its side output;
    ``end``: what the run's output goes to.
    """
    ns: dict[str, Any] = {
        "partial": partial,
        "NONE": _NONE,
        "GATHER": GATHER,
        "IMMUTABLE": IMMUTABLE,
    }
    sinks: list[tuple[SinkOp, list[int]]] = []
    for i, op in enumerate(ops):
        ns.update({f"r{i}": op.retry, f"n{i}": op.name, f"p{i}": op.process, f"o{i}": outs[i]})
        ns[f"s{i}"] = sides[i]
        if isinstance(op, MapOp | ReduceByKeyOp):  # every compiled kind has its function
            ns[f"f{i}"] = op.fn
        if isinstance(op, ReduceByKeyOp):  # the state's get, and its put written inline
            data, dirty, ns[f"x{i}"] = op.totals.put_parts()
            ns[f"d{i}"], ns[f"g{i}"], ns[f"m{i}"] = data, data.get, dirty.add
            if i == 0:  # a frame's keys marked at once (``run_columns``)
                ns["u0"] = partial(_mark, dirty)
        if type(op) is SinkOp:
            ns[f"c{i}"] = cell = [0]
            sinks.append((op, cell))
            break  # nothing follows a sink (``_body`` ends there too)
    if isinstance(end, Emit):
        ns["emit"], ns["see"], ns["send"] = end.emit, end.see, end.send
        ns["emit_columns"] = end.emit_columns
    else:
        ns["out"] = end
    # a run that reaches the chain's end may gather its records for one ``emit_columns``
    gather = isinstance(end, Emit) and end.emit_columns is not None and SinkOp not in map(type, ops)
    # one record's run gathers its output only when it may be several (a flat_map's)
    fans = gather and any(type(op) is FlatMapOp for op in ops)
    sink = next((i for i, op in enumerate(ops) if type(op) is SinkOp), None)
    columns = "zip(keys, values, strict=True)"
    lines = [
        "def run(key, value):",
        *_gathered(_body(ops, end, 2 if fans else 1, False, fans), fans),
        "def run_all(entries):",
        *_loop("entries", ops, end, gather, sink, marked=False),
        "def run_columns(keys, values):",
        # a run that starts with a reduce_by_key marks a frame's keys changed at once
        *(
            _loop(columns, ops, end, gather, sink, marked=True)
            if _tracked(ops[0])
            else [f"    run_all({columns})"]
        ),
    ]
    source = "\n".join(lines) + "\n"
    filename = f"<headwater steps {next(_serial)}>"
    # tracebacks and profilers show the generated lines, for as long as the function lives
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
    weakref.finalize(ns["run"], linecache.cache.pop, filename, None)
    return Compiled(ns["run"], ns["run_all"], ns["run_columns"], sinks)


def _tracked(op: Op) -> bool:
    """Whether ``op`` is a reduce_by_key whose state notes the keys it writes."""
    return type(op) is ReduceByKeyOp and op.totals.tracked


def _mark(changed: set[Any], keys: list[Any]) -> None:
    """A frame's keys into the changed keys of the state a compiled ``reduce_by_key`` at the
    head of its run writes (after the frame: a superset of the keys it wrote, which is what a
    snapshot needs); one by one when a key is unhashable (its record went to the retry)."""
    try:
        changed.update(keys)
    except TypeError:
        for key in keys:
            with suppress(TypeError):
                changed.add(key)


GATHER = 1000
"""The most output records a run gathers before emitting them: one frame's worth at the
default batch size, so that a flat_map's output still meets backpressure as it goes."""
# the gathered records leave, and gathering starts again in new lists (never twice, even
# if emitting raises)
_LEAVE = (
    "dk, dv, pk, pv = pk, pv, [], []",
    "gk, gv = pk.append, pv.append",
    "emit_columns([dk, dv])",
)


def _loop(
    source: str, ops: Sequence[Op], end: Out | Emit, gather: bool, sink: int | None, marked: bool
) -> list[str]:
    """A function's lines that run each ``key, value`` of ``source`` through ``ops``. What must
    happen however the loop ends comes after it: with ``marked`` (the run starts with a
    ``reduce_by_key`` and ``keys`` is its input's column) the frame's keys are marked changed,
    the sink's records counted in a local are added to its cell, the gathered output leaves."""
    prelude, finals = [], []
    if marked:
        finals.append("u0(keys)")
    if sink is not None:
        prelude.append(f"t{sink} = 0")
        finals.append(f"c{sink}[0] += t{sink}")
    if gather:
        prelude += _GATHER_START
        finals += _GATHER_END
    depth = 3 if finals else 2
    body = ["    " * (depth - 1) + f"for key, value in {source}:"]
    body += _body(ops, end, depth, True, gather, marked)
    return _wrapped(body, prelude, finals)


# a function's gathering of its output records' keys in ``pk`` and values in ``pv``, emitted
# together at its end, however it ends
_GATHER_START = ("pk, pv = [], []", "gk, gv = pk.append, pv.append")
_GATHER_END = ("if pk:", "    emit_columns([pk, pv])")


def _gathered(body: list[str], gather: bool) -> list[str]:
    """``body`` (a function's lines), gathering its output records (``_GATHER_START``)."""
    return _wrapped(body, _GATHER_START, _GATHER_END) if gather else body


def _wrapped(body: list[str], prelude: Sequence[str], finals: Sequence[str]) -> list[str]:
    """``body`` (a function's lines, indented in a ``try``) after ``prelude`` and with
    ``finals`` in its ``finally``; ``body`` as it is when nothing must come after it."""
    if not finals:
        return body
    return [
        *("    " + line for line in prelude),
        "    try:",
        *body,
        "    finally:",
        *("        " + line for line in finals),
    ]


def _body(
    ops: Sequence[Op],
    end: Out | Emit,
    depth: int,
    batch: bool,
    gather: bool = False,
    marked: bool = False,
) -> list[str]:
    """The lines of one record's pass through ``ops``, indented ``depth`` levels; leaving
    the record early is ``continue`` in a loop (``batch``, or inside a ``flat_map``'s).
    With ``gather``, output records go to ``pk`` and ``pv``, and a retry (which runs the rest of the
    chain linked, emitting as it goes) first emits what is gathered, so order holds. In a
    loop (``batch``) a sink counts its records in a local (``_loop`` adds it to the cell);
    with ``marked``, a first ``reduce_by_key`` leaves its keys to the loop's end."""
    lines: list[str] = []
    top = depth
    k, v = "key", "value"

    def put(line: str) -> None:
        lines.append("    " * depth + line)

    def leave() -> str:
        return "continue" if batch or depth > top else "return"

    def guarded(i: int, body: list[str], key: str, value: str) -> None:
        """``body`` in a try; a record it raises on goes to step ``i``'s retry."""
        put("try:")
        for b in body:
            put("    " + b)
        put("except Exception as exc:")
        if gather:  # what was gathered leaves first
            put("    if pk:")
            for line in _LEAVE:
                put("        " + line)
        put(f"    r{i}(n{i}, partial(p{i}, {key}, {value}, o{i}, s{i}), exc, {value})")
        put("    " + leave())

    for i, op in enumerate(ops):
        kind = type(op)
        if kind is SinkOp:
            guarded(i, [f"f{i}({v})"], k, v)
            put(f"t{i} += 1" if batch else f"c{i}[0] += 1")
            return lines  # nothing follows a sink
        if kind is ReduceByKeyOp:
            guarded(
                i,
                [f"a{i} = g{i}({k}, NONE)", f"a{i} = {v} if a{i} is NONE else f{i}(a{i}, {v})"],
                k,
                v,
            )
            # the keyed state's put (KeyedState.accessors), inline; a state that no snapshot
            # reads notes nothing (UntrackedKeyedState)
            put(f"d{i}[{k}] = a{i}")
            if _tracked(op):
                if not (marked and i == 0):
                    put(f"m{i}({k})")
                put(f"if a{i}.__class__ not in IMMUTABLE:")
                put(f"    x{i}.add({k})")
                put(f"elif x{i}:")
                put(f"    x{i}.discard({k})")
            v = f"a{i}"
        elif kind is MapOp:
            guarded(i, [f"v{i} = f{i}({v})"], k, v)
            v = f"v{i}"
        elif kind is KeyByOp:
            guarded(i, [f"k{i} = f{i}({v})"], k, v)
            k = f"k{i}"
        elif kind is FilterOp:
            guarded(i, [f"d{i} = not f{i}({v})"], k, v)
            put(f"if d{i}:")
            put("    " + leave())
        elif kind is FlatMapOp:
            # all or nothing: a generator that raises half way has emitted none of it
            guarded(i, [f"vs{i} = list(f{i}({v}))"], k, v)
            put(f"for v{i} in vs{i}:")
            v = f"v{i}"
            depth += 1
        else:  # pragma: no cover - COMPILED and this function name the same classes
            raise AssertionError(f"step {op.name!r} of {kind.__name__} is not compiled")
    if gather:
        put(f"gk({k})")
        put(f"gv({v})")
        put("if len(pk) >= GATHER:")  # a frame's output never waits all at once
        for line in _LEAVE:
            put("    " + line)
    elif isinstance(end, Emit):
        put(f"emit([{k}, {v}])")
        if end.see is not None:
            put(f"if see({v}):")
            put("    send()")
    else:
        put(f"out({k}, {v})")
    return lines
