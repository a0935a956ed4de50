"""An agent's fence: where its rows change placement, in band, with the state that moves.

A move switches each agent at a barrier of its own, E_a (docs/design.md, "Moving a
subgraph between edge and cloud"). The outbox sink that carries the moved component's
input seals a *fence row* (``FENCE_STREAM``) among its rows at the place E_a falls: it rides
the exactly-once outbox like any row, so a replay puts it at the same place, and the
cloud receiver of that outbox turns it into a fence on ``FENCE_OUT`` to every task of the
moved component's cloud copy, before the rows that follow it.

A keyed component moved from the edge to the cloud takes its state there in its fence: the
agent's final snapshot of the component at E_a (``state``, the keys of its ``site``), or,
where that state could not leave (``error``: held outside keyed state, say), why not. The
cloud trusts none of it (``fence_problem``); the state is read as plain values only.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..plan._fence_streams import FENCE_FIELDS, FENCE_OUT, FENCE_OUT_FIELDS, FENCE_STREAM

__all__ = [
    "FENCE_FIELDS",
    "FENCE_OUT",
    "FENCE_OUT_FIELDS",
    "FENCE_START",
    "FENCE_STREAM",
    "Fence",
    "fence_problem",
    "fence_values",
]


FENCE_START = "fence"
"""An outbox sink's start state: the fence row it seals before any other."""


@dataclass(frozen=True)
class Fence:
    agent: str
    revision: int
    checkpoint: int
    site: str
    state: bytes | None
    error: str
    to: str  # where the moved component runs for the agent's rows after the fence

    @classmethod
    def from_values(cls, values: list[Any]) -> Fence:
        """A fence from its ``FENCE_OUT`` values (checked by the receiver)."""
        agent, revision, checkpoint, site, state, error, to = values
        return cls(agent, revision, checkpoint, site, state, error, to)


def fence_values(
    revision: int,
    checkpoint: int,
    site: str,
    state: bytes | None,
    error: str = "",
    to: str = "cloud",
) -> list[Any]:
    """A fence row's values, as the agent's outbox sink seals them on ``FENCE_STREAM``."""
    return [revision, checkpoint, site, state, error, to]


def fence_problem(values: Any) -> str | None:
    """Why an agent's fence row is not one, or None."""
    if type(values) is not list or len(values) != len(FENCE_FIELDS):
        return f"a fence row whose values are not a list of {len(FENCE_FIELDS)}"
    revision, checkpoint, site, state, error, to = values
    if to not in ("edge", "cloud"):
        return "a fence row whose target is not 'edge' or 'cloud'"
    if type(revision) is not int or type(checkpoint) is not int:
        return "a fence row whose revision or checkpoint is not an integer"
    if type(site) is not str or type(error) is not str:
        return "a fence row whose site or error is not a string"
    if state is not None and type(state) is not bytes:
        return "a fence row whose state is not bytes"
    return None
