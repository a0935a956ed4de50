"""heronpy's streamlet API over the DSL: the same classes and calls, with the bugs fixed.

What a heronpy topology is written against: ``Builder``, ``Streamlet``,
``Config``, ``Runner``. A heronpy streamlet graph is built lazily (names may
be set after the call that made a streamlet, as in Heron); ``Runner.run``
turns it into a DSL pipeline, so chains fuse and windows keep their state in
checkpoints. Compared with Heron's Python implementation: keys go to tasks by
a stable hash (not the per-process ``hash()``), ``repartition`` without a
function spreads evenly, ``clone`` gives copies, outer joins work, and
windows take an ``int`` (seconds) or a ``timedelta`` (``_windows.py``, with
the shape of window results).

What user code subclasses (``Generator``, ``TransformOperator``) and is
handed (``StreamletContext``) is in ``_operators.py``. How a graph becomes a
``headwater.dsl.Pipeline`` is in ``_translate.py``, which reads a
``Streamlet`` through its own Protocol (``StreamletNode``) and never imports
this module; the one call down into it is
``Builder._pipeline`` (for ``Builder.build``, and so ``Runner.run``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, overload

from headwater.common.api import _submit
from headwater.common.dsl import Pipeline

from ..api.api_constants import (
    TOPOLOGY_CONTAINER_CPU_REQUESTED,
    TOPOLOGY_CONTAINER_RAM_REQUESTED,
    TOPOLOGY_RELIABILITY_MODE,
    TOPOLOGY_STMGRS,
    TopologyReliabilityMode,
)
from ..api.topology import TopologyBuilder
from ._operators import Generator, TransformOperator
from ._translate import to_pipeline
from ._windows import WindowConfig
from .resources import Resources


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
        return to_pipeline(self._all, name, config)


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
