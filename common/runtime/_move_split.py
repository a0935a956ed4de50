"""A receiver's split of each agent's rows at its fence, where the cloud also reads them.

While a component moves between the edge and the cloud (docs/design.md, "Moving a subgraph
between edge and cloud"), every agent switches at an edge barrier of its own, E_a, and the
outbox of the component feeding the moved one says so in band: a fence row
(``FENCE_STREAM``, ``_fence.py``) falls at E_a among its rows, naming where the moved
component runs for the agent's rows after it. Where the cloud also reads that input, the
receiver keeps emitting every row on its stream for every other reader, and ``MoveSplit``
says which rows the moved component's cloud copy must count as well, on a stream of its own
(``MOVE_PREFIX + stream``, which that copy reads instead): an agent's rows while the
component runs in the cloud for it. ``where`` (agent -> [where, the fence's revision]) and
``before`` (where it ran for an agent with no fence yet: the code's placement, set when the
split is first used) are the receiver's checkpointed state beside its replay filter, so a
rollback replays the same batches with the same split. A fence of an older move changes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, MutableMapping
from typing import Any

from ..plan._fence_streams import FENCE_OUT, FENCE_STREAM, MOVE_PREFIX

__all__ = ["FENCE_OUT", "FENCE_STREAM", "MOVE_PREFIX", "MoveSplit"]


class MoveSplit:
    """One receiver's split of its rows for a moved component reading ``streams``."""

    def __init__(
        self, streams: Iterable[str], state: MutableMapping[Any, Any], before: str
    ) -> None:
        self.streams = frozenset(streams)
        self.where: dict[str, list[Any]] = state.setdefault("where", {})
        self.before: str = state.setdefault("before", before)

    def in_cloud(self, agent: str) -> bool:
        """Whether the moved component runs in the cloud for ``agent``'s rows now."""
        known = self.where.get(agent)
        return (known[0] if known else self.before) == "cloud"

    def fence(self, agent: str, revision: int, to: str) -> bool:
        """Note ``agent``'s fence; False for one of an older move (or the same again)."""
        known = self.where.get(agent)
        if known is not None and known[1] >= revision:
            return False
        self.where[agent] = [to, revision]
        return True

    def copies(self, agent: str, stream: str) -> str | None:
        """The stream the cloud copy takes ``agent``'s row of ``stream`` on, or None."""
        if stream in self.streams and self.in_cloud(agent):
            return MOVE_PREFIX + stream
        return None
