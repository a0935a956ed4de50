"""heronpy's streamlet API over the DSL: the same classes and calls, with the bugs fixed.

A heronpy streamlet graph is built lazily (names may be set after the call
that made a streamlet, as in Heron); ``Runner.run`` turns it into a DSL
pipeline, so chains fuse and windows keep their state in checkpoints.
Compared with Heron's Python implementation: keys go to tasks by a stable
hash (not the per-process ``hash()``), ``repartition`` without a function
spreads evenly, ``clone`` gives copies, outer joins work, and windows take
an ``int`` (seconds) or a ``timedelta``. Windows are in processing time, as
in Heron; their results are ``(KeyedWindow(key, Window(start, end)),
value)`` (``Window`` bounds in epoch seconds) for keyed operations and
``(Window(start, end), value)`` for ``reduce_by_window``. They are named
tuples: after a hop to another component they arrive as plain lists.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any, NamedTuple, overload

from headwater.common.api import Context, Spout, Tuple, _submit
from headwater.common.dsl import Pipeline, Sliding, Tumbling
from headwater.common.dsl import Streamlet as DslStreamlet
from headwater.common.dsl._ops import Op
from headwater.common.dsl._sources import GeneratorSpout

from ..api.api_constants import (
    TOPOLOGY_CONTAINER_CPU_REQUESTED,
    TOPOLOGY_CONTAINER_RAM_REQUESTED,
    TOPOLOGY_RELIABILITY_MODE,
    TOPOLOGY_STMGRS,
    TopologyReliabilityMode,
)
from ..api.topology import TopologyBuilder
from .resources import Resources


class Window(NamedTuple):
    start: float
    end: float

    def __repr__(self) -> str:  # Heron's
        return f"Window {{start_time: {_secs(self.start)}, end_time: {_secs(self.end)}}}"


class KeyedWindow(NamedTuple):
    key: Any
    window: Window

    def __repr__(self) -> str:  # Heron's
        return f"KeyedWindow {{key: {self.key}, window: {Window(*self.window)!r}}}"


def _secs(t: float) -> float | int:
    return int(t) if float(t).is_integer() else t


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


class WindowConfig:
    """A processing-time window: ``create_tumbling_window(10)`` or ``timedelta(seconds=10)``."""

    def __init__(self, window_duration: Any, slide_interval: Any) -> None:
        self._window_duration = _seconds(window_duration, "window duration")
        self._slide_interval = _seconds(slide_interval, "slide interval")

    @staticmethod
    def create_tumbling_window(window_duration: Any) -> WindowConfig:
        return WindowConfig(window_duration, window_duration)

    @staticmethod
    def create_sliding_window(window_duration: Any, slide_interval: Any) -> WindowConfig:
        return WindowConfig(window_duration, slide_interval)

    def _assigner(self) -> Tumbling | Sliding:
        """The DSL's windows; when the duration is no multiple of the slide, windows every
        gcd(duration, slide) seconds, of which ``_on_slide`` keeps those on the slide."""
        size, slide = self._window_duration * 1000, self._slide_interval * 1000
        if size == slide:
            return Tumbling(size)
        return Sliding(size, math.gcd(size, slide))

    def _on_slide(self) -> Callable[[dict[str, Any]], bool] | None:
        size, slide = self._window_duration * 1000, self._slide_interval * 1000
        if size == slide or math.gcd(size, slide) == slide:
            return None
        return partial(_starts_on, slide)


def _starts_on(slide_ms: int, w: dict[str, Any]) -> bool:
    return int(w["start"]) % slide_ms == 0


def _seconds(value: Any, what: str) -> int:
    if isinstance(value, datetime.timedelta):
        if value.microseconds or value.total_seconds() <= 0:
            raise RuntimeError(f"the {what} must be a positive whole number of seconds")
        return int(value.total_seconds())
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise RuntimeError(f"the {what} must be a positive int (seconds) or a timedelta, got {value!r}")


class Generator:
    """A source: ``setup(context)`` once, then ``get()`` for each element (None: nothing now)."""

    def setup(self, context: Any) -> None:
        raise NotImplementedError("Generator not implementing setup() method.")

    def get(self) -> Any:
        raise NotImplementedError("Generator not implementing get() method.")


class TransformOperator:
    """``setup(context)`` once; ``transform(tup)`` per element, emitting with ``context.emit``."""

    def setup(self, context: Any) -> None:
        raise NotImplementedError("TransformOperator not implementing setup() method.")

    def transform(self, tup: Any) -> None:
        raise NotImplementedError("TransformOperator not implementing transform() method.")


class StreamletContext:
    """What generators and transform operators see (heronpy's ``Context``)."""

    def __init__(self, ctx: Context, emit: Callable[[Any], None] | None = None) -> None:
        self._ctx, self._emit = ctx, emit

    def get_task_id(self) -> int:
        return self._ctx.task_id

    def get_config(self) -> Any:
        return self._ctx.config

    def get_stream_name(self) -> str:
        return self._ctx.component

    def get_num_partitions(self) -> int:
        return len(self._ctx.component_tasks(self._ctx.component))

    def get_partition_index(self) -> int:
        return self._ctx.component_index

    def get_state(self) -> Any:
        return self._ctx.state

    def emit(self, values: Any) -> None:
        if self._emit is None:
            raise RuntimeError("emit() is for transform operators")
        self._emit(values)


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


class Config:
    """heronpy's streamlet ``Config``: topology configuration.

    ``set_num_containers`` records ``topology.stmgrs``; ``headwater run --containers``
    (or the master's placement) decides how many run."""

    ATMOST_ONCE = 1
    ATLEAST_ONCE = 2
    EFFECTIVELY_ONCE = 3
    _MODES = {
        ATMOST_ONCE: TopologyReliabilityMode.ATMOST_ONCE,
        ATLEAST_ONCE: TopologyReliabilityMode.ATLEAST_ONCE,
        EFFECTIVELY_ONCE: TopologyReliabilityMode.EFFECTIVELY_ONCE,
    }

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        if config is not None and not isinstance(config, dict):
            raise RuntimeError("Config has to be of type dict")
        self._api_config: dict[str, Any] = dict(config or {})

    def set_delivery_semantics(self, semantics: int) -> None:
        if semantics not in self._MODES:
            raise RuntimeError(f"Unknown Topology delivery semantics {semantics}")
        self._api_config[TOPOLOGY_RELIABILITY_MODE] = self._MODES[semantics]

    def set_num_containers(self, ncontainers: int) -> None:
        self._api_config[TOPOLOGY_STMGRS] = int(ncontainers)

    def set_container_resources(self, resources: Resources) -> None:
        if not isinstance(resources, Resources):
            raise RuntimeError("container resources have to be of type Resources")
        self._api_config[TOPOLOGY_CONTAINER_CPU_REQUESTED] = resources.get_cpu()
        self._api_config[TOPOLOGY_CONTAINER_RAM_REQUESTED] = resources.get_ram()

    def set_user_config(self, key: str, value: Any) -> None:
        self._api_config[key] = value


class Streamlet:
    """A stream of elements; each method adds an operation and returns the new streamlet."""

    def __init__(self, builder: Builder, op: str, parents: list[Streamlet], **params: Any) -> None:
        self._builder, self._op, self._parents, self._params = builder, op, parents, params
        self._name: str | None = None
        self._num_partitions: int = parents[0]._num_partitions if parents else 1
        builder._all.append(self)

    def set_name(self, name: str) -> Streamlet:
        self._name = name
        return self

    def get_name(self) -> str | None:
        return self._name

    def set_num_partitions(self, num_partitions: int) -> Streamlet:
        self._num_partitions = num_partitions
        return self

    def get_num_partitions(self) -> int:
        return self._num_partitions

    def _then(self, op: str, others: Iterable[Streamlet] = (), **params: Any) -> Streamlet:
        return Streamlet(self._builder, op, [self, *others], **params)

    def map(self, map_function: Callable[[Any], Any]) -> Streamlet:
        return self._then("map", fn=map_function)

    def flat_map(self, flatmap_function: Callable[[Any], Iterable[Any]]) -> Streamlet:
        return self._then("flatmap", fn=flatmap_function)

    def filter(self, filter_function: Callable[[Any], bool]) -> Streamlet:
        return self._then("filter", fn=filter_function)

    def repartition(
        self, num_partitions: int, repartition_function: Callable[[Any, int], Any] | None = None
    ) -> Streamlet:
        """Spread over ``num_partitions``; ``repartition_function(element, n)`` may pick the
        partition (or a list of them)."""
        s = self._then("repartition", fn=repartition_function)
        return s.set_num_partitions(num_partitions)

    def clone(self, num_clones: int) -> list[Streamlet]:
        return [self.repartition(self._num_partitions) for _ in range(num_clones)]

    def reduce_by_window(
        self, window_config: WindowConfig, reduce_function: Callable[[Any, Any], Any]
    ) -> Streamlet:
        return self._then("reducebywindow", window=window_config, fn=reduce_function)

    def reduce_by_key_and_window(
        self, window_config: WindowConfig, reduce_function: Callable[[Any, Any], Any]
    ) -> Streamlet:
        return self._then("reducebykeyandwindow", window=window_config, fn=reduce_function)

    def union(self, other_streamlet: Streamlet) -> Streamlet:
        return self._then("union", [other_streamlet])

    def transform(self, transform_operator: TransformOperator) -> Streamlet:
        return self._then("transform", operator=transform_operator)

    def log(self) -> None:
        self._then("log")

    def consume(self, consume_function: Callable[[Any], None]) -> None:
        self._then("consume", fn=consume_function)

    def _join(
        self,
        how: str,
        other: Streamlet,
        window_config: WindowConfig,
        join_function: Callable[[Any, Any], Any],
    ) -> Streamlet:
        return self._then("join", [other], how=how, window=window_config, fn=join_function)

    def join(
        self,
        join_streamlet: Streamlet,
        window_config: WindowConfig,
        join_function: Callable[[Any, Any], Any],
    ) -> Streamlet:
        return self._join("inner", join_streamlet, window_config, join_function)

    def outer_left_join(
        self,
        join_streamlet: Streamlet,
        window_config: WindowConfig,
        join_function: Callable[[Any, Any], Any],
    ) -> Streamlet:
        return self._join("left", join_streamlet, window_config, join_function)

    def outer_right_join(
        self,
        join_streamlet: Streamlet,
        window_config: WindowConfig,
        join_function: Callable[[Any, Any], Any],
    ) -> Streamlet:
        return self._join("right", join_streamlet, window_config, join_function)

    def outer_join(
        self,
        join_streamlet: Streamlet,
        window_config: WindowConfig,
        join_function: Callable[[Any, Any], Any],
    ) -> Streamlet:
        return self._join("outer", join_streamlet, window_config, join_function)


class Builder:
    """Collects the streamlet graph: ``new_source(generator_or_function)``."""

    def __init__(self) -> None:
        self._all: list[Streamlet] = []

    def new_source(self, source: Generator | Callable[[], Any]) -> Streamlet:
        if not isinstance(source, Generator) and not callable(source):
            raise RuntimeError("Builder's new source has to be either a Generator or a function")
        return Streamlet(self, "generator", [], source=source)

    @overload
    def build(self, name: str, config: dict[str, Any] | None = None) -> Pipeline: ...
    @overload
    def build(self, name: TopologyBuilder, config: None = None) -> TopologyBuilder: ...

    def build(
        self, name: str | TopologyBuilder, config: dict[str, Any] | None = None
    ) -> Pipeline | TopologyBuilder:
        """Heron's form, ``build(topology_builder)``: add this graph's components to that
        ``TopologyBuilder`` and return it. ``build(name, config)``: the DSL pipeline of
        this graph. Streamlets are named as set, else ``<operation>-<n>``."""
        if isinstance(name, TopologyBuilder):
            name._add_native(self._pipeline(name.topology_name, None).build())
            return name
        return self._pipeline(name, config)

    def _pipeline(self, name: str, config: dict[str, Any] | None) -> Pipeline:
        pipeline = Pipeline(name, config=config)
        names: set[str] = set()
        for s in self._all:
            if s._name is not None:
                if s._name in names:
                    raise RuntimeError(
                        f"Duplicate Names: {s._name!r}; give each streamlet its own name"
                    )
                names.add(s._name)
        for s in self._all:
            if s._name is None:
                n = 1
                while f"{s._op}-{n}" in names:
                    n += 1
                s._name = f"{s._op}-{n}"
                names.add(s._name)
        built: dict[int, DslStreamlet | None] = {}
        for s in self._all:  # creation order: parents first
            built[id(s)] = _to_dsl(pipeline, s, [built[id(p)] for p in s._parents])
        return pipeline


def _to_dsl(p: Pipeline, s: Streamlet, parents: list[DslStreamlet | None]) -> DslStreamlet | None:
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


class Runner:
    """``Runner().run(name, config, builder)``: builds the topology and hands it to Headwater."""

    def run(self, name: str, config: Config, builder: Builder) -> None:
        if not isinstance(name, str):
            raise RuntimeError("Name has to be a string type")
        if not isinstance(config, Config):
            raise RuntimeError("config has to be a Config type")
        if not isinstance(builder, Builder):
            raise RuntimeError("builder has to be a Builder type")
        _submit.submit(builder.build(name, config._api_config).build())


class ArrayLooper(Generator):
    """heronpy's mock source: loops over ``user_iterable`` forever (``sleep`` s between)."""

    def __init__(self, user_iterable: Iterable[Any], sleep: float | None = None) -> None:
        self._items = list(user_iterable)
        self._sleep = sleep

    def setup(self, context: Any) -> None:
        self._i = 0

    def get(self) -> Any:
        if self._sleep:
            time.sleep(self._sleep)
        item = self._items[self._i % len(self._items)]
        self._i += 1
        return item
