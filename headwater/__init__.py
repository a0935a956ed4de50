"""Headwater: one streaming DAG runtime for edge gateways and the cloud.

Write a topology with the native API (``Topology``, ``Spout``, ``Bolt``) or
heronpy's (``headwater.heronpy``), then run it with ``headwater run FILE``.
"""

from headwater.common._exceptions import (
    ClusterError,
    DeadLetter,
    EmitError,
    HeadwaterError,
    InvalidTopologyError,
    PackageMismatchError,
    SerializationError,
    TopologyLoadError,
)
from headwater.common.api import (
    DEAD_LETTERS,
    DEFAULT_STREAM,
    Bolt,
    ComponentSpec,
    Context,
    CustomGrouping,
    Grouping,
    Input,
    Placement,
    Reliability,
    Spout,
    Stream,
    Topology,
    Tuple,
    all_tasks,
    custom,
    direct,
    fields,
    global_,
    none,
    shuffle,
)

__version__ = "0.1.0"

__all__ = [
    "DEAD_LETTERS",
    "DEFAULT_STREAM",
    "Bolt",
    "ClusterError",
    "ComponentSpec",
    "Context",
    "CustomGrouping",
    "DeadLetter",
    "EmitError",
    "Grouping",
    "HeadwaterError",
    "Input",
    "InvalidTopologyError",
    "PackageMismatchError",
    "Placement",
    "Reliability",
    "SerializationError",
    "Spout",
    "Stream",
    "Topology",
    "TopologyLoadError",
    "Tuple",
    "all_tasks",
    "custom",
    "direct",
    "fields",
    "global_",
    "none",
    "shuffle",
]
