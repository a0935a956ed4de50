"""Keyed state for a component whose parallelism changes in a live edit.

Each new task gets, from the snapshots of all the old tasks, the keys that a
fields grouping now routes to it: ``key_hash(key) % parallelism == index``,
as the emitter routes them (so keyed state is expected to be keyed by the
value of the grouping field, as ``ctx.keyed_state`` is meant to be used).
State outside keyed state belongs to one task and cannot be split.
"""

from __future__ import annotations

from collections.abc import Sequence

from .._exceptions import HeadwaterError
from ..plan._routing import key_hash
from ..state import KeyedState, State
from ..state._state import dump_snapshot, load_snapshot


class RescaleError(HeadwaterError):
    """Snapshots that cannot be split between a new number of tasks."""


def rescale(component: str, blobs: Sequence[bytes | None], index: int, parallelism: int) -> bytes:
    """The snapshot of task ``index`` (of ``parallelism``) from every old task's snapshot."""
    keyed: dict[str, KeyedState] = {}
    for blob in blobs:
        if blob is None:
            continue
        state, parts, _ = load_snapshot(blob)
        if len(state):
            names = ", ".join(sorted(map(repr, state))[:3])
            raise RescaleError(
                f"{component!r} keeps state outside keyed_state ({names}), which cannot be "
                "split between a new number of tasks: keep its parallelism, or keep that state "
                "per key"
            )
        for name, values in parts.items():
            mine = keyed.setdefault(name, KeyedState())
            for key, value in values.items():
                if key_hash(key) % parallelism == index:
                    mine[key] = value
    return dump_snapshot(State(), keyed)
