"""A run of simple steps compiled into one function: no call between steps.

A chain of closures (``Op.link``) costs a Python call per step per record, and
a word count's sender spends more in those calls than in its own functions.
``compile_run`` writes one function for a run of consecutive steps of the
kinds in ``COMPILED`` (map, flat_map, filter, key_by, reduce_by_key, sink):
each step's work is a few lines of its body, a ``flat_map`` a loop around the
rest, and the run's end calls what follows it (or emits, when the run ends the
chain).

Behaviour is the steps' own, record for record: each step's user function sits
in a ``try`` of its own, and a record it raises on goes to the step's retry
with the step's ``process`` bound to the *uncompiled* rest of the chain (as
``Op.link`` does), then on to the next record (or the next element of a
``flat_map``'s output). A sink's records are counted in a cell the chain adds
to the user counter ``records:<step>`` after each frame (``settle``), not with
a call per record.

The source is made from fixed templates over step indexes only: no step name,
value or user text is ever part of it (they are bound in the function's
namespace), so nothing a pipeline says can change the code that runs.
"""

from __future__ import annotations

import linecache
from collections.abc import Callable, Sequence
from functools import partial
from itertools import count
from typing import Any

from ._ops import (
    _NONE,
    FilterOp,
    FlatMapOp,
    KeyByOp,
    MapOp,
    Op,
    Out,
    ReduceByKeyOp,
    Side,
    SinkOp,
)

COMPILED: frozenset[type[Op]] = frozenset(
    {MapOp, FlatMapOp, FilterOp, KeyByOp, ReduceByKeyOp, SinkOp}
)
"""Step classes compiled as they are (a subclass may change ``process``: it is linked)."""

_serial = count()


def compilable(op: Op) -> bool:
    return type(op) in COMPILED


class Emit:
    """The end of a chain, for a run that reaches it: ``emit([key, value])``, then, with
    ``see``, ``send()`` when ``see(value)`` says watermarks are due."""

    def __init__(
        self,
        emit: Callable[[list[Any]], None],
        see: Callable[[Any], bool] | None = None,
        send: Callable[[], None] | None = None,
    ) -> None:
        self.emit, self.see, self.send = emit, see, send


class Compiled:
    """A compiled run: ``call(key, value)`` runs it for one record; ``settle()`` adds the
    records its sinks took since the last call to their counters."""

    def __init__(self, call: Out, sinks: list[tuple[SinkOp, list[int]]]) -> None:
        self.call, self._sinks = call, sinks

    def settle(self) -> None:
        for op, cell in self._sinks:
            if cell[0]:
                n, cell[0] = cell[0], 0
                op.ctx.incr(op.counter, n)


def compile_run(
    ops: Sequence[Op], outs: Sequence[Out], sides: Sequence[Side], end: Out | Emit
) -> Compiled:
    """One function for ``ops`` (each ``compilable``, each open).

    ``outs[i]``: what ``ops[i]``'s output goes to in the uncompiled chain (a retry's
    attempt runs the rest of the chain through it); ``sides[i]``: its side output;
    ``end``: what the run's output goes to.
    """
    ns: dict[str, Any] = {"partial": partial, "NONE": _NONE}
    lines = ["def run(key, value):"]
    k, v, depth = "key", "value", 1
    sinks: list[tuple[SinkOp, list[int]]] = []

    def put(line: str) -> None:
        lines.append("    " * depth + line)

    def guarded(i: int, body: list[str], key: str, value: str) -> None:
        """``body`` in a try; a record it raises on goes to step ``i``'s retry."""
        put("try:")
        for b in body:
            put("    " + b)
        put("except Exception as exc:")
        put(f"    r{i}(n{i}, partial(p{i}, {key}, {value}, o{i}, s{i}), exc, {value})")
        put("    " + ("return" if depth == 1 else "continue"))

    ended = False
    for i, op in enumerate(ops):
        ns.update({f"r{i}": op.retry, f"n{i}": op.name, f"p{i}": op.process, f"o{i}": outs[i]})
        ns[f"s{i}"] = sides[i]
        kind = type(op)
        if kind is SinkOp:
            assert isinstance(op, SinkOp)
            ns[f"f{i}"], cell = op.fn, [0]
            ns[f"c{i}"] = cell
            sinks.append((op, cell))
            guarded(i, [f"f{i}({v})"], k, v)
            put(f"c{i}[0] += 1")
            ended = True  # nothing follows a sink
            break
        if kind is ReduceByKeyOp:
            assert isinstance(op, ReduceByKeyOp)
            ns[f"f{i}"] = op.fn
            ns[f"g{i}"], ns[f"u{i}"] = op.totals.accessors()
            guarded(
                i,
                [f"a{i} = g{i}({k}, NONE)", f"a{i} = {v} if a{i} is NONE else f{i}(a{i}, {v})"],
                k,
                v,
            )
            put(f"u{i}({k}, a{i})")
            v = f"a{i}"
            continue
        assert isinstance(op, MapOp)
        ns[f"f{i}"] = op.fn
        if kind is MapOp:
            guarded(i, [f"v{i} = f{i}({v})"], k, v)
            v = f"v{i}"
        elif kind is KeyByOp:
            guarded(i, [f"k{i} = f{i}({v})"], k, v)
            k = f"k{i}"
        elif kind is FilterOp:
            guarded(i, [f"d{i} = not f{i}({v})"], k, v)
            put(f"if d{i}:")
            put("    " + ("return" if depth == 1 else "continue"))
        elif kind is FlatMapOp:
            # all or nothing: a generator that raises half way has emitted none of it
            guarded(i, [f"vs{i} = list(f{i}({v}))"], k, v)
            put(f"for v{i} in vs{i}:")
            v = f"v{i}"
            depth += 1
        else:  # pragma: no cover - COMPILED and this function name the same classes
            raise AssertionError(f"step {op.name!r} of {kind.__name__} is not compiled")
    if not ended:
        if isinstance(end, Emit):
            ns["emit"] = end.emit
            put(f"emit([{k}, {v}])")
            if end.see is not None:
                ns["see"], ns["send"] = end.see, end.send
                put(f"if see({v}):")
                put("    send()")
        else:
            ns["out"] = end
            put(f"out({k}, {v})")
    source = "\n".join(lines) + "\n"
    filename = f"<headwater steps {next(_serial)}>"
    # tracebacks and profilers show the generated lines
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), ns)
    return Compiled(ns["run"], sinks)
