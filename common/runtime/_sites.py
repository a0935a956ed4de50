"""The site of each key, for a component that may move between edge and cloud (issue 37).

A component declaring ``headwater.placement.sites(FIELD)`` says that ``FIELD`` of its keyed
input names the site of every record's key. Its instances keep that relation as they
see it, in a keyed state of their own (``SITES_STATE``: grouping key -> site, checkpointed
and rescaled with the component's keyed state), so that a move can split the state by site
(``_handover.py``). The executor hands every data frame to ``SiteTable.note`` before the
component sees it; a key is written once, when first seen (an incremental snapshot carries
only the new keys), and a record naming another site for a known key is counted
(``site_changes``, a user counter: the declared relation is false for that key) and
changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ..api import Topology
from ..api._config import SITES
from ._handover import SITES_STATE
from ._task_state import TaskState

SITE_CHANGES = "site_changes"
"""The counter of records whose site is not the one their key was first seen with."""


def site_inputs(topology: Topology, component: str) -> dict[tuple[str, str], tuple[list[int], int]]:
    """(component, stream) -> (the key fields' positions, the site field's position) of each
    fields-grouped input carrying the site field; empty without a ``sites`` declaration."""
    spec = topology.component(component)
    field = spec.config.get(SITES)
    out: dict[tuple[str, str], tuple[list[int], int]] = {}
    if not isinstance(field, str):
        return out
    for inp in spec.inputs:
        if inp.grouping.kind != "fields":
            continue
        stream = topology.component(inp.component).stream(inp.stream)
        if stream is None or field not in stream.fields:
            continue
        if all(f in stream.fields for f in inp.grouping.fields):
            keys = [stream.fields.index(f) for f in inp.grouping.fields]
            out[inp.component, inp.stream] = (keys, stream.fields.index(field))
    return out


class SiteTable:
    """One task's notes of its keys' sites, into its keyed state ``SITES_STATE``."""

    def __init__(
        self,
        inputs: dict[tuple[str, str], tuple[list[int], int]],
        store: TaskState,
        incr: Callable[[str], None],
    ) -> None:
        self.inputs = inputs
        self.store = store  # the task's state (a restore replaces its keyed states)
        self.incr = incr  # a user counter (``ctx.incr``)

    def note(self, component: str, stream: str, entries: Iterable[Any], rooted: bool) -> None:
        """Note the site of every key in one frame's ``entries`` (value lists or tuples)."""
        where = self.inputs.get((component, stream))
        if where is None:
            return
        idx, site_at = where
        table = self.store.keyed_state(SITES_STATE)
        known = table._data  # read without noting: only a new key is written
        for entry in entries:
            values = entry[0] if rooted else entry
            key = values[idx[0]] if len(idx) == 1 else tuple(values[i] for i in idx)
            site = values[site_at]
            try:
                had = known.get(key, known)  # the dict itself: not there
            except TypeError:  # an unhashable key routes by its rendering: no state under it
                continue
            if had is known:
                table[key] = site
            elif had != site:
                self.incr(SITE_CHANGES)


def site_table(topology: Topology, component: str, store: TaskState, incr: Any) -> SiteTable | None:
    """The task's table, or None for a component that declares no ``sites`` (the executor
    then does nothing more per frame)."""
    inputs = site_inputs(topology, component)
    return SiteTable(inputs, store, incr) if inputs else None
