"""A cloud container's part in a keyed move to the edge: the keys its tasks gave up (issue 37).

At each agent's fence, every task of the moved component's cloud copy takes the keys of that
agent's site out of its keyed state into ``OUTGOING`` (``_handover_bolt.py``), so the task's
snapshot of the next checkpoint carries them. ``MoveOutgoing`` reads them from the snapshots
the container receives (a task's delta names only what changed: a site given up appears
once) and, once that checkpoint commits, sends each to the topology master
(``PutState``, with its site), which gathers every task's part and has the master hand them
to the site's agent. Only tasks of a component moving to the edge are read (``watched``).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..state import KeyedState, State
from ..state._state import dump_snapshot, load_delta

log = logging.getLogger("headwater.container")

OUTGOING = "__outgoing__"
"""A moved component's keyed state of what it gave up: site -> {"revision": the move's,
"keys": name -> {key: value}}."""


@dataclass(frozen=True)
class GivenUp:
    checkpoint: int
    revision: int  # the move's
    component: str
    task: int
    site: str
    blob: bytes  # a snapshot of keyed state only: the site's keys this task held


Send = Callable[[GivenUp], Awaitable[None]]
"""Sends one task's part to the topology master."""


class MoveOutgoing:
    def __init__(self, watched: Callable[[int], str | None], send: Send) -> None:
        self.watched = watched  # task -> its component, where it is moving to the edge
        self.send = send
        self.pending: list[GivenUp] = []

    def on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        component = self.watched(task)
        if component is None:
            return
        try:
            given = load_delta(blob).get("keyed", {}).get(OUTGOING)
        except Exception as exc:  # not readable here: the checkpoint itself says so
            log.warning("task %d's snapshot %d: %s", task, checkpoint, exc)
            return
        for site, given_up in (given or {}).items():
            if not isinstance(given_up, dict) or type(given_up.get("revision")) is not int:
                continue
            keyed = {n: KeyedState(dict(v)) for n, v in _parts(given_up.get("keys"))}
            blob = dump_snapshot(State(), keyed)
            self.pending.append(
                GivenUp(checkpoint, given_up["revision"], component, task, str(site), blob)
            )

    async def on_commit(self, checkpoint: int) -> None:
        """Send what the committed checkpoint holds (an older one's too, not yet sent)."""
        due = [g for g in self.pending if g.checkpoint <= checkpoint]
        if not due:
            return
        self.pending = [g for g in self.pending if g.checkpoint > checkpoint]
        for g in due:
            await self.send(g)

    def forget(self) -> None:
        """A restore: what was not committed is taken again from the restored state."""
        self.pending.clear()


def _parts(part: Any) -> list[tuple[str, dict[Any, Any]]]:
    if not isinstance(part, dict):
        return []
    return [(n, v) for n, v in part.items() if isinstance(n, str) and isinstance(v, dict)]
