"""``--isolation``: which user a topology's code runs as on a node (common/node/_users.py);
``--topology-memory``, ``--topology-cpus``, ``--topology-processes``: what each topology's
containers on a node may use together (common/node/_limits.py)."""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from headwater._argtypes import number, whole

if TYPE_CHECKING:  # the node's modules load grpc: not for every command line
    from headwater.common.node._limits import TopologyLimits

_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", re.IGNORECASE)
DEFAULTS = (4 << 30, 0.0, 1024)
"""TopologyLimits()'s figures (a test holds them equal)."""


def size(text: str) -> int:
    """Bytes from ``4GiB``, ``512MiB``, ``512M`` or a plain number of bytes (at least 64 MiB)."""
    m = _SIZE.fullmatch(text)
    if m is None:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size: give e.g. 4GiB or 512MiB")
    value = int(float(m.group(1)) * _UNITS[m.group(2).lower()])
    if value < 64 << 20:
        raise argparse.ArgumentTypeError(f"{text!r} is too little memory: give 64MiB or more")
    return value


def add_limit_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--isolation",
        choices=("auto", "user", "none"),
        default="auto",
        help="run each topology's code as a user of its own: auto (default) where this node "
        "can (as root), user to require it, none never (docs/security.md)",
    )
    p.add_argument(
        "--topology-memory",
        type=size,
        default=DEFAULTS[0],
        metavar="SIZE",
        help="memory each topology's containers here may use together (default 4GiB)",
    )
    p.add_argument(
        "--topology-cpus",
        type=number(0, what="a number of cores"),
        default=DEFAULTS[1],
        metavar="CORES",
        help="CPU each topology's containers here may use together, in cores (default 0: no cap)",
    )
    p.add_argument(
        "--topology-processes",
        type=whole(16, what="a number of processes"),
        default=DEFAULTS[2],
        metavar="N",
        help="processes and threads each topology here may have together (default 1024)",
    )


def limits_of(args: argparse.Namespace) -> TopologyLimits:
    from headwater.common.node._limits import TopologyLimits

    return TopologyLimits(args.topology_memory, args.topology_cpus, args.topology_processes)
