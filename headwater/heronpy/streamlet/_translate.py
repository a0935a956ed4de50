"""The streamlet API's translation onto the DSL: a ``Builder``'s graph as a ``Pipeline``.

``to_pipeline`` names the streamlets (as set, else ``<operation>-<n>``) and
adds each, parents first, to a ``headwater.dsl.Pipeline`` (``_to_dsl``):
per-element operations become DSL steps, windows and joins keyed DSL
windows (``WindowConfig._assigner``) whose results come back as ``Window``
and ``KeyedWindow`` tuples. What the DSL has no step for runs as an adapter:
``PacedGeneratorSpout`` (a ``Generator`` or function as a source),
``_TransformOp`` (a ``TransformOperator``), ``_LogOp`` (``log``).

This module imports the API's classes (``_operators.py``, ``_windows.py``),
never ``_api.py``: it reads a streamlet through ``StreamletNode``, a Protocol
of what it needs, which ``_api.Streamlet`` satisfies. ``_api.py`` calls
``to_pipeline`` from ``Builder._pipeline`` and nothing else here.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, Protocol

from headwater.common.api import Context, Spout, Tuple
from headwater.common.dsl import Pipeline
from headwater.common.dsl import Streamlet as DslStreamlet
from headwater.common.dsl._ops import Op
from headwater.common.dsl._sources import GeneratorSpout

from ._operators import Generator, StreamletContext, TransformOperator
from ._windows import KeyedWindow, Window, WindowConfig


class StreamletNode(Protocol):
    """What the translation reads of a heronpy streamlet (``_api.Streamlet`` is one):
    its operation and its parameters, its parents, its partitions, and its name, which
    ``to_pipeline`` sets where the user did not."""

    _name: str | None

    @property
    def _op(self) -> str: ...
    @property
    def _parents(self) -> Sequence[StreamletNode]: ...
    @property
    def _params(self) -> Mapping[str, Any]: ...
    @property
    def _num_partitions(self) -> int: ...


class PacedGeneratorSpout(GeneratorSpout):
    """Calls ``get()`` until it returns None, for at most ``BUDGET_S`` per ``next_tuple``
    (and ``BATCH`` elements): a generator that takes its time (sleeps, polls) emits each
    element as it comes, as under Heron's one ``get()`` per ``next_tuple``, while a quick
    one still fills a batch."""

    BUDGET_S = 0.005

    def __init__(self, fn: Callable[[], Any], generator: Generator | None = None) -> None:
        super().__init__(fn)
        self.generator = generator

    def open(self, ctx: Context) -> None:
        if self.generator is not None:
            self.generator.setup(StreamletContext(ctx))
        super().open(ctx)

    def next_tuple(self) -> bool | None:
        fn, emit = self.fn, self.ctx.emit
        deadline = time.monotonic() + self.BUDGET_S
        for _ in range(self.BATCH):
            value = fn()
            if value is None:
                return None
            emit([value])
            if time.monotonic() >= deadline:
                return None
        return None


def _generator_spout(source: Generator | Callable[[], Any]) -> Spout:
    """A spout over a heronpy ``Generator`` (set up with the streamlet context) or a function."""
    if isinstance(source, Generator):
        return PacedGeneratorSpout(source.get, source)
    return PacedGeneratorSpout(source)


def to_pipeline(
    streamlets: Sequence[StreamletNode], name: str, config: dict[str, Any] | None
) -> Pipeline:
    """The DSL pipeline of a builder's streamlets (in creation order: parents first)."""
    pipeline = Pipeline(name, config=config)
    names: set[str] = set()
    for s in streamlets:
        if s._name is not None:
            if s._name in names:
                raise RuntimeError(
                    f"Duplicate Names: {s._name!r}; give each streamlet its own name"
                )
            names.add(s._name)
    for s in streamlets:
        if s._name is None:
            n = 1
            while f"{s._op}-{n}" in names:
                n += 1
            s._name = f"{s._op}-{n}"
            names.add(s._name)
    built: dict[int, DslStreamlet | None] = {}
    for s in streamlets:  # creation order: parents first
        built[id(s)] = _to_dsl(pipeline, s, [built[id(p)] for p in s._parents])
    return pipeline


def _to_dsl(
    p: Pipeline, s: StreamletNode, parents: list[DslStreamlet | None]
) -> DslStreamlet | None:
    name, op, kw, n = s._name or s._op, s._op, s._params, s._num_partitions
    first = parents[0] if parents else None
    if op == "generator":
        return p.source(name, partial(_generator_spout, kw["source"]), parallelism=n)
    assert first is not None
    if op == "map":
        return first.map(name, kw["fn"], parallelism=n)
    if op == "flatmap":
        return first.flat_map(name, kw["fn"], parallelism=n)
    if op == "filter":
        return first.filter(name, kw["fn"], parallelism=n)
    if op == "repartition":
        return first.repartition(name, n, kw["fn"])
    if op == "union":
        assert parents[1] is not None
        return p.union(name, first, parents[1])
    if op == "transform":
        return first.apply(name, partial(_TransformOp, name, kw["operator"]), parallelism=n)
    if op == "log":
        shape = _WINDOWED.get(s._parents[0]._op)
        first.apply(name, partial(_LogOp, name, shape), parallelism=n)
        return None
    if op == "consume":
        first.sink(name, kw["fn"], parallelism=n)
        return None
    window: WindowConfig = kw["window"]
    if op == "reducebywindow":
        reduced = (
            first.key_by(f"{name}-key", _all_one, parallelism=1)
            .window(name, window._assigner(), timestamp=None)
            .reduce(f"{name}-reduce", kw["fn"])
        )
        return _on_slide(reduced, name, window).map(f"{name}-out", _window_result)
    if op == "reducebykeyandwindow":
        reduced = (
            first.key_by(f"{name}-key", _first, parallelism=n)
            .map(f"{name}-value", _second)
            .window(name, window._assigner(), timestamp=None)
            .reduce(f"{name}-reduce", kw["fn"])
        )
        return _on_slide(reduced, name, window).map(f"{name}-out", _keyed_window_result)
    if op == "join":
        right = parents[1]
        assert right is not None
        left = first.key_by(f"{name}-lkey", _first).map(f"{name}-lvalue", _second)
        rkey = right.key_by(f"{name}-rkey", _first).map(f"{name}-rvalue", _second)
        joined = left.join(
            name,
            rkey,
            window._assigner(),
            kw["fn"],
            timestamp=None,
            how=kw["how"],
            parallelism=n,
            with_window=True,
        )
        return _on_slide(joined, name, window).map(f"{name}-out", _keyed_window_result)
    raise AssertionError(op)


def _on_slide(windows: DslStreamlet, name: str, window: WindowConfig) -> DslStreamlet:
    """Keep only the windows that start on the slide (see ``WindowConfig._assigner``)."""
    keep = window._on_slide()
    return windows if keep is None else windows.filter(f"{name}-slide", keep)


def _all_one(element: Any) -> int:
    return 0


def _first(element: Any) -> Any:
    _check_pair(element)
    return element[0]


def _second(element: Any) -> Any:
    return element[1]


def _check_pair(element: Any) -> None:
    if not isinstance(element, tuple | list) or len(element) != 2:
        raise RuntimeError(f"keyed streamlet operations take (key, value) pairs, got {element!r}")


def _window_result(w: dict[str, Any]) -> tuple[Window, Any]:
    return Window(w["start"] / 1000, w["end"] / 1000), w["value"]


def _keyed_window_result(w: dict[str, Any]) -> tuple[KeyedWindow, Any]:
    return KeyedWindow(w["key"], Window(w["start"] / 1000, w["end"] / 1000)), w["value"]


def _as_window_result(shape: str | None, element: Any) -> Any:
    """A window operation's result again, after a hop between components made it lists."""
    if shape is None or not isinstance(element, list | tuple) or len(element) != 2:
        return element
    head, value = element
    if shape == "window" and isinstance(head, list | tuple) and len(head) == 2:
        return Window(*head), value
    if shape == "keyed" and isinstance(head, list | tuple) and len(head) == 2:
        key, window = head
        if isinstance(window, list | tuple) and len(window) == 2:
            return KeyedWindow(key, Window(*window)), value
    return element


_WINDOWED = {"reducebywindow": "window", "reducebykeyandwindow": "keyed", "join": "keyed"}


class _LogOp(Op):
    """heronpy's log: each element as ``str(element)`` at INFO, on the component's logger
    (a window operation's results as Heron prints them, even after a hop)."""

    def __init__(self, name: str, shape: str | None = None) -> None:
        super().__init__(name)
        self.shape = shape

    def process(self, key: Any, value: Any, out: Callable[[Any, Any], None], side: Any) -> None:
        self.ctx.log.info("%s", _as_window_result(self.shape, value))


class _TransformOp(Op):
    """A ``TransformOperator`` as a DSL step: ``context.emit`` passes elements on."""

    def __init__(self, name: str, operator: TransformOperator) -> None:
        super().__init__(name)
        self.operator = operator
        self._out: Callable[[Any, Any], None] | None = None
        self._key: Any = None

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

        def emit(value: Any) -> None:
            assert self._out is not None
            self._out(self._key, value)

        self.operator.setup(StreamletContext(ctx, emit))

    def process(self, key: Any, value: Any, out: Callable[[Any, Any], None], side: Any) -> None:
        self._out, self._key = out, key
        self.operator.transform(Tuple(None, self.ctx.component, "default", 0, [value], time.time()))
