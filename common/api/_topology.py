"""The logical plan: a topology as immutable data.

``Topology`` is a frozen value; ``add_spout``/``add_bolt`` return a new one.
Execution is separate (see ``headwater.cloud.local``).

>>> from headwater import Topology, Spout, Bolt, fields
>>> class Words(Spout):
...     outputs = ("word",)
...     def next_tuple(self): ...
>>> class Count(Bolt):
...     def process(self, tup): ...
>>> t = (Topology("wc")
...      .add_spout("words", Words, parallelism=2)
...      .add_bolt("count", Count, inputs={"words": fields("word")}))
>>> [c.name for c in t.components]
['words', 'count']
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Literal

from ._component import Bolt, Spout
from ._config import DSL_STEPS
from ._stream import (
    DEAD_LETTER_STREAM,
    DEAD_LETTERS,
    DEFAULT_STREAM,
    Grouping,
    Input,
    Stream,
    as_streams,
    shuffle,
)

Factory = Callable[[], Spout | Bolt]


@dataclass(frozen=True)
class Placement:
    """Where a component may run: ``cloud`` (default) or edge agents matching ``selector``."""

    where: Literal["cloud", "edge"] = "cloud"
    selector: Mapping[str, str] = field(default_factory=dict)

    @property
    def is_edge(self) -> bool:
        return self.where == "edge"

    def matches(self, labels: Mapping[str, str]) -> bool:
        """True for an edge placement whose selector the agent's ``labels`` satisfy."""
        return self.is_edge and all(labels.get(k) == v for k, v in self.selector.items())


def edge(selector: Mapping[str, str] | None = None, **labels: str) -> Placement:
    """Place a component on every edge agent whose labels include ``selector``.

    >>> edge(site="plant-1").matches({"site": "plant-1", "gpu": "no"})
    True
    >>> edge().matches({})  # no selector: every agent
    True
    """
    return Placement("edge", {**(selector or {}), **labels})


def cloud() -> Placement:
    """Place a component on cloud workers (the default)."""
    return Placement()


@dataclass(frozen=True)
class ComponentSpec:
    """One node of the logical plan."""

    name: str
    kind: Literal["spout", "bolt"]
    factory: Factory = field(compare=False)
    parallelism: int = 1
    inputs: tuple[Input, ...] = ()
    outputs: tuple[Stream, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    placement: Placement = field(default_factory=Placement)

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))

    @property
    def streams(self) -> tuple[Stream, ...]:
        """``outputs`` plus the dead-letter stream every component has (``DEAD_LETTERS``)."""
        if any(s.name == DEAD_LETTERS for s in self.outputs):
            return self.outputs
        return (*self.outputs, DEAD_LETTER_STREAM)

    def stream(self, name: str) -> Stream | None:
        for s in self.streams:
            if s.name == name:
                return s
        return None


InputsArg = Mapping[str, Grouping] | Mapping[tuple[str, str], Grouping] | Sequence[Input]


@dataclass(frozen=True)
class Topology:
    """A named DAG of components with its configuration."""

    name: str
    components: tuple[ComponentSpec, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    dead_letters: str | None = None
    """The component that receives every component's dead letters (``with_dead_letters``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "config", MappingProxyType(dict(self.config)))

    def component(self, name: str) -> ComponentSpec:
        for c in self.components:
            if c.name == name:
                return c
        raise KeyError(name)

    def add(self, spec: ComponentSpec) -> Topology:
        """Return a copy with ``spec`` appended; a duplicate name is rejected with a hint."""
        if any(c.name == spec.name for c in self.components):
            from .._exceptions import InvalidTopologyError

            raise InvalidTopologyError(
                self.name,
                [
                    f"component {spec.name!r} is defined twice: do you have two components "
                    "with the same name? Give each a unique name."
                ],
            )
        components = self.components
        sink = self.dead_letters
        if sink is not None and _dead_letters_from(spec, self.component(sink)):
            components = tuple(
                _subscribe_dead_letters(c, spec.name) if c.name == sink else c for c in components
            )
        return replace(self, components=(*components, spec))

    def with_dead_letters(
        self,
        name: str,
        sink: Factory,
        *,
        parallelism: int = 1,
        config: Mapping[str, Any] | None = None,
        placement: Placement | None = None,
    ) -> Topology:
        """Add ``sink``, a bolt that receives the dead letters of every component.

        A record on which a bolt's ``process`` or a DSL step raises is tried again
        ``topology.record.max.retries`` times (default 3; ``DeadLetter`` at once), then
        leaves on the component's ``__dead_letters`` stream as ``[component, reason,
        traceback, record]``, and processing goes on. The sink subscribes to that stream of
        every component added before or after it (a cloud sink to edge components too: edge
        dead letters cross with the rest). Under exactly-once, give it a transactional sink
        (``TransactionalFileSink``): a dead letter is then decided once, as any output.
        Without a sink, dead letters are counted, logged and listed under ``/exceptions``.

        >>> from headwater.common.connectors import TransactionalFileSink
        >>> t = Topology("t").with_dead_letters("dead", lambda: TransactionalFileSink("/tmp/d"))
        >>> t.dead_letters
        'dead'
        """
        spec = ComponentSpec(
            name,
            "bolt",
            sink,
            parallelism,
            (),
            _outputs(sink, None),
            dict(config or {}),
            placement or Placement(),
        )
        for c in self.components:
            if _dead_letters_from(c, spec):
                spec = _subscribe_dead_letters(spec, c.name)
        return replace(self.add(spec), dead_letters=name)

    def add_spout(
        self,
        name: str,
        spout: Factory,
        *,
        parallelism: int = 1,
        outputs: Sequence[Stream | str] | None = None,
        config: Mapping[str, Any] | None = None,
        placement: Placement | None = None,
    ) -> Topology:
        return self.add(
            ComponentSpec(
                name,
                "spout",
                spout,
                parallelism,
                (),
                _outputs(spout, outputs),
                dict(config or {}),
                placement or Placement(),
            )
        )

    def add_bolt(
        self,
        name: str,
        bolt: Factory,
        *,
        inputs: InputsArg,
        parallelism: int = 1,
        outputs: Sequence[Stream | str] | None = None,
        config: Mapping[str, Any] | None = None,
        placement: Placement | None = None,
    ) -> Topology:
        return self.add(
            ComponentSpec(
                name,
                "bolt",
                bolt,
                parallelism,
                _inputs(inputs),
                _outputs(bolt, outputs),
                dict(config or {}),
                placement or Placement(),
            )
        )

    def with_config(self, **updates: Any) -> Topology:
        """Return a copy whose config has ``updates`` merged in (keys with dots: pass a dict)."""
        return replace(self, config={**self.config, **updates})

    def merged_config(self, component: str) -> dict[str, Any]:
        """Topology config overlaid by the component's own."""
        return {**self.config, **self.component(component).config}


def _dead_letters_from(spec: ComponentSpec, sink: ComponentSpec) -> bool:
    """Whether ``sink`` takes ``spec``'s dead letters: bolts and fused DSL sources (spouts
    whose chain has steps), on a path streams may take (edge to cloud, or within one place)."""
    if spec.name == sink.name:
        return False
    if spec.kind == "spout" and len(spec.config.get(DSL_STEPS, ())) < 2:
        return False  # a plain spout's records come from no user step
    return not sink.placement.is_edge or spec.placement == sink.placement


def _subscribe_dead_letters(sink: ComponentSpec, component: str) -> ComponentSpec:
    return replace(sink, inputs=(*sink.inputs, Input(component, DEAD_LETTERS, shuffle())))


def _outputs(factory: Factory, outputs: Sequence[Stream | str] | None) -> tuple[Stream, ...]:
    if outputs is None:
        outputs = getattr(factory, "outputs", ())
    return as_streams(list(outputs or ()))


def _inputs(inputs: InputsArg) -> tuple[Input, ...]:
    if isinstance(inputs, Mapping):
        out = []
        for key, grouping in inputs.items():
            if isinstance(key, tuple):
                out.append(Input(key[0], key[1], grouping))
            else:
                out.append(Input(key, DEFAULT_STREAM, grouping))
        return tuple(out)
    return tuple(inputs)
