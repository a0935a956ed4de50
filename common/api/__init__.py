"""The native, typed topology API (the heronpy compat layer maps onto it)."""

from ._component import Bolt, Component, Context, Spout
from ._config import Reliability, RuntimeConfig
from ._stream import (
    DEAD_LETTER_FIELDS,
    DEAD_LETTERS,
    DEFAULT_STREAM,
    CustomGrouping,
    Grouping,
    Input,
    Stream,
    all_tasks,
    custom,
    direct,
    fields,
    global_,
    none,
    shuffle,
)
from ._topology import ComponentSpec, Placement, Topology, cloud, edge
from ._tuple import TICK_COMPONENT, TICK_STREAM, Tuple

__all__ = [
    "DEAD_LETTERS",
    "DEAD_LETTER_FIELDS",
    "DEFAULT_STREAM",
    "TICK_COMPONENT",
    "TICK_STREAM",
    "Bolt",
    "Component",
    "ComponentSpec",
    "Context",
    "CustomGrouping",
    "Grouping",
    "Input",
    "Placement",
    "Reliability",
    "RuntimeConfig",
    "Spout",
    "Stream",
    "Topology",
    "Tuple",
    "all_tasks",
    "cloud",
    "custom",
    "direct",
    "edge",
    "fields",
    "global_",
    "none",
    "shuffle",
]
