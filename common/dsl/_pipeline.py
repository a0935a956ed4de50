"""The functional DSL: ``source -> map -> key_by -> window -> reduce -> sink``, as a topology.

>>> from headwater.dsl import Pipeline, Tumbling
>>> p = Pipeline("totals")
>>> (p.from_collection("readings", [{"sensor": "a", "ts": 1, "v": 2.0}])
...   .filter("valid", lambda r: r["v"] >= 0)
...   .key_by("by_sensor", lambda r: r["sensor"])
...   .window("per_10s", Tumbling(10), timestamp=lambda r: r["ts"])
...   .reduce("total", lambda a, b: {**a, "v": a["v"] + b["v"]})
...   .log("show"))  # doctest: +ELLIPSIS
<headwater.common.dsl._streamlet.Streamlet object at ...>
>>> [(c.name, c.config["headwater.dsl.steps"]) for c in p.build().components]
[('readings', ('readings', 'valid', 'by_sensor')), ('per_10s', ('per_10s', 'total', 'show'))]

Every step has a unique name, which is also the key of its state in
checkpoints. Steps fuse into one component unless something needs an
exchange (``headwater.common.dsl._build`` says when). The topology's
components list their steps in ``config["headwater.dsl.steps"]``, and the
physical plan shows them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import partial
from typing import Any

from .._exceptions import InvalidTopologyError
from ..api import Bolt, Placement, Spout, Topology
from ..api._system import system_component
from ._build import DeadLetters, _Step, build
from ._ops import (
    MapOp,
)
from ._sources import CollectionSpout, GeneratorSpout
from ._streamlet import Streamlet, identity


class Pipeline:
    """A topology written as steps over streams of records."""

    def __init__(
        self, name: str, config: Mapping[str, Any] | None = None, *, fuse: bool = True
    ) -> None:
        """``fuse=False`` gives every step a component of its own (for comparison)."""
        self.name = name
        self.config = dict(config or {})
        self.fuse = fuse
        self._steps: dict[str, _Step] = {}
        self._dead_letters: DeadLetters | None = None

    # -- sources ----------------------------------------------------------------
    def source(
        self,
        name: str,
        spout: Callable[[], Spout],
        *,
        parallelism: int = 1,
        placement: Placement | None = None,
    ) -> Streamlet:
        """Any spout as a source: each tuple it emits is a record (one field: its value)."""
        step = _Step(
            name, None, parallelism=parallelism, placement=placement or Placement(), source=spout
        )
        return Streamlet(self, self._add(step))

    def from_collection(
        self,
        name: str,
        items: Iterable[Any],
        *,
        parallelism: int = 1,
        placement: Placement | None = None,
    ) -> Streamlet:
        """A fixed collection, emitted once (exactly once under checkpoints)."""
        return self.source(
            name,
            partial(CollectionSpout, list(items)),
            parallelism=parallelism,
            placement=placement,
        )

    def from_log(
        self,
        name: str,
        path: str,
        partitions: int,
        *,
        parallelism: int = 1,
        placement: Placement | None = None,
    ) -> Streamlet:
        """A durable log (e.g. the agent's MQTT ingest log): records are its value lists."""
        spout = system_component("log_spout", Spout, path=path, partitions=partitions)
        return self.source(name, spout, parallelism=parallelism, placement=placement)

    def from_generator(
        self,
        name: str,
        fn: Callable[[], Any],
        *,
        parallelism: int = 1,
        placement: Placement | None = None,
    ) -> Streamlet:
        """Records from ``fn()`` (None: nothing now). Not replayable: at most once."""
        return self.source(
            name, partial(GeneratorSpout, fn), parallelism=parallelism, placement=placement
        )

    def union(self, name: str, *streams: Streamlet) -> Streamlet:
        """The records of every stream, as one stream."""
        if len(streams) < 2:
            raise InvalidTopologyError(self.name, [f"union {name!r} needs two streams or more"])
        first = streams[0].step
        step = _Step(
            name,
            partial(MapOp, name, identity),
            parents=[(s.step, s.tag) for s in streams],
            parallelism=first.parallelism,
            placement=first.placement,
            exchange=True,
        )
        return Streamlet(self, self._add(step))

    def dead_letters(
        self,
        name: str,
        sink: Callable[[], Bolt],
        *,
        parallelism: int = 1,
        placement: Placement | None = None,
    ) -> None:
        """Send every step's dead letters to ``sink`` (e.g. ``TransactionalFileSink``).

        A record on which a step's function raises is tried again
        ``topology.record.max.retries`` times (``DeadLetter``: at once), then ``sink``
        gets ``[step, reason, traceback, record]`` and the step goes on with the next
        record (``Topology.with_dead_letters``). Without a sink they are counted,
        logged and listed under ``/exceptions``.
        """
        if name in self._steps:
            raise InvalidTopologyError(self.name, [f"step {name!r} is defined twice"])
        self._dead_letters = (name, sink, parallelism, placement)

    def _add(self, step: _Step) -> _Step:
        if step.name in self._steps:
            raise InvalidTopologyError(
                self.name,
                [
                    f"step {step.name!r} is defined twice: step names are also the keys of their "
                    "state in checkpoints, so each must be unique; rename one"
                ],
            )
        if not step.name or step.name.startswith("__") or "." in step.name:
            raise InvalidTopologyError(
                self.name,
                [
                    f"step name {step.name!r}: use a non-empty name without dots that does not "
                    "start with '__'"
                ],
            )
        self._steps[step.name] = step
        return step

    # -- compiling ----------------------------------------------------------------
    def build(self) -> Topology:
        """The topology: chains of fusable steps become one component each (``_build``)."""
        return build(
            self.name, self.config, self.fuse, list(self._steps.values()), self._dead_letters
        )
