"""``build_and_submit()``'s side: hand a built topology to the loader running the file.

A heronpy-style file builds its topology and calls ``build_and_submit()`` under
``__main__``; the loader (``plan/_loader.py``) runs the file inside
``capturing()`` and takes what was submitted. Here, below the loader, so that
the API (heronpy) may submit without importing the plan.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from .._exceptions import TopologyLoadError
from ._topology import Topology

_captured: list[Topology] | None = None


def submit(topology: Topology) -> None:
    """Called by ``build_and_submit()``: hand the topology to the loader running this file."""
    if _captured is None:
        raise TopologyLoadError(
            f"topology {topology.name!r} was submitted outside Headwater's loader: "
            "run this file with `headwater run FILE`"
        )
    _captured.append(topology)


@contextmanager
def capturing() -> Iterator[list[Topology]]:
    """Collect the topologies submitted while the block runs (nested blocks are apart)."""
    global _captured
    previous, _captured = _captured, []
    try:
        yield _captured
    finally:
        _captured = previous
