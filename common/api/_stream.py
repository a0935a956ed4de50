"""Streams and groupings: how components declare outputs and subscribe to inputs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

DEFAULT_STREAM = "default"
DEAD_LETTERS = "__dead_letters"
"""The system stream of every component's dead letters (``Topology.with_dead_letters``)."""
DEAD_LETTER_FIELDS = ("component", "reason", "traceback", "record")
PUNCTUATION = "wm:"
"""The prefix of punctuation streams (the DSL's watermarks): the emitter sends their frames
only after the data sent before them."""


@dataclass(frozen=True)
class Stream:
    """An output stream of a component: its name and positional field names.

    ``schema``, when given, names the Python type of each field; the plan
    validator rejects types the wire codec cannot carry before anything starts.

    >>> Stream(("sensor", "value"), schema=(str, float)).name
    'default'
    """

    fields: tuple[str, ...]
    name: str = DEFAULT_STREAM
    direct: bool = False
    schema: tuple[type, ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "fields", tuple(self.fields))
        if self.schema is not None:
            object.__setattr__(self, "schema", tuple(self.schema))


DEAD_LETTER_STREAM = Stream(DEAD_LETTER_FIELDS, DEAD_LETTERS)
"""Declared by every component: ``[component, reason, traceback, record]`` per dead letter."""


@runtime_checkable
class CustomGrouping(Protocol):
    """User routing logic, run in the emitting instance.

    ``prepare`` is called once per emitting instance before the first tuple,
    with the sorted task ids of the consuming component; ``choose_tasks`` is
    called for every tuple and returns a subset of those ids. Both run on the
    executor thread and must not block.
    """

    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None: ...

    def choose_tasks(self, values: list[object]) -> list[int]: ...


@dataclass(frozen=True)
class Grouping:
    """How the tuples of one stream are split among a consumer's tasks."""

    kind: str
    fields: tuple[str, ...] = ()
    custom: CustomGrouping | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if self.kind == "fields":
            return f"fields({', '.join(self.fields)})"
        return self.kind


def shuffle() -> Grouping:
    """Round-robin from a random start: even load, no key affinity."""
    return Grouping("shuffle")


def fields(*names: str | Sequence[str]) -> Grouping:
    """Same values of ``names`` always go to the same task (hashing the encoded bytes).

    Takes names (``fields("site", "sensor")``) or one sequence of them.
    """
    flat: list[str] = []
    for name in names:
        flat.extend([name] if isinstance(name, str) else name)
    return Grouping("fields", tuple(flat))


def all_tasks() -> Grouping:
    """Every task of the consumer gets every tuple."""
    return Grouping("all")


def global_() -> Grouping:
    """Every tuple goes to the consumer's lowest task id."""
    return Grouping("global")


def none() -> Grouping:
    """No preference; routed like shuffle."""
    return Grouping("none")


def direct() -> Grouping:
    """The emitter names the task (``emit(..., direct_task=t)``); the stream must be direct."""
    return Grouping("direct")


def custom(grouping: CustomGrouping) -> Grouping:
    """Route with user code (see :class:`CustomGrouping`)."""
    return Grouping("custom", custom=grouping)


@dataclass(frozen=True)
class Input:
    """A subscription: ``component``'s ``stream``, split by ``grouping``."""

    component: str
    stream: str = DEFAULT_STREAM
    grouping: Grouping = field(default_factory=shuffle)


def as_streams(outputs: Sequence[Stream | str]) -> tuple[Stream, ...]:
    """Normalise heronpy-style outputs: bare field names form the default stream."""
    names = [o for o in outputs if isinstance(o, str)]
    streams = [o for o in outputs if isinstance(o, Stream)]
    if names:
        streams.insert(0, Stream(tuple(names)))
    return tuple(streams)
