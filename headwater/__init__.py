"""Headwater: one streaming DAG runtime for edge gateways and the cloud.

Write a topology with the native API (``Topology``, ``Spout``, ``Bolt``) or
heronpy's (``headwater.heronpy``), then run it with ``headwater run FILE``.
"""

import os

# Before anything imports grpc (gRPC reads it then): every process Headwater starts is
# fork-then-exec, and gRPC's fork handlers crash such a child before its exec while a
# channel is busy (measured with grpcio 1.85: 5-23 of 300 Popen calls with a preexec_fn
# died of "epoll_wait: Bad file descriptor"; 0 of 300 with the handlers off). The
# process that imports headwater first (a daemon, the CLI, a user's program or a test
# run) decides for all of it; a program that imported grpc before headwater keeps its own.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")

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
