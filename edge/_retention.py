"""The ingest log's retention: trim it below what every edge subgraph reading it has
checkpointed.

Each edge container reports, per partition of the log its spouts read, the
offset its last complete checkpoint committed (``log_committed:LOG#pN``); the
log is trimmed below the lowest of those, and not at all while an ordered
subgraph has not reported yet (unresumed, starting: it may read from further
back than the running ones).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from headwater.common.control import TopologyMaster

RETENTION_S = 5.0


class Trimmable(Protocol):
    """The ingest log, as retention sees it."""

    def trim(self, partition: int, before: int) -> None: ...


def committed_floor(tms: Iterable[TopologyMaster], prefix: str) -> dict[int, float]:
    """Per partition of the log whose metrics start with ``prefix``, the lowest offset the
    subgraphs committed."""
    floor: dict[int, float] = {}
    for tm in list(tms):
        mine = {
            int(k[len(prefix) :]): v
            for k, v in tm.metrics.get("container:0", {}).items()
            if k.startswith(prefix)
        }
        for p, offset in mine.items():
            floor[p] = min(floor.get(p, offset), offset)
    return floor


async def keep_trimmed(
    log: Trimmable | None,
    log_path: Path,
    tms: Mapping[str, TopologyMaster],
    ordered: Callable[[], set[str]],
    each_round: Callable[[], None],
) -> None:
    """Every ``RETENTION_S``: ``each_round()``, then trim ``log`` (none: nothing to trim) below
    what the subgraphs in ``tms`` committed, once every topology ``ordered()`` reports."""
    prefix = f"log_committed:{log_path.resolve()}#p"
    while True:
        await asyncio.sleep(RETENTION_S)
        if log is None:
            continue
        each_round()
        if any(not (t in tms and tms[t].metrics.get("container:0")) for t in ordered()):
            continue
        for p, offset in committed_floor(tms.values(), prefix).items():
            log.trim(p, int(offset))
