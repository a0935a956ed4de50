"""An agent's fences for a component that moves between its subgraph and the cloud.

Where a move's rows are fenced (``plan/_move_fences.py``: the moved component keeps keyed
state, or the cloud also reads its edge input), the outbox sink of that input seals a fence
row (``_fence.py``) at the place the agent's switch checkpoint E_a falls among its rows.
The sink's config ``FENCE_FOR`` says for which component and which way; since that config
changes with the move, the sink is replaced at E_a: its old instance retires there and, where
the input still crosses, a new one starts from its snapshot.

Moving to the cloud (``fence_snapshots``), the new instance starts with one row to seal
before any other: the fence, carrying the component's state as of E_a (every task's keys in
one snapshot) where it declares its sites, with the agent's site (the value of its label
that the sites field names). Where that state cannot leave (held outside keyed state, or not
readable here), the fence says why instead, and the cloud says so under its dead letters;
the records still cross once either way.

Moving to the edge (``retiring_fences``), the retiring instance seals the fence last, after
the last row read under the old placement, without state: the cloud's copy gives up that
site's keys there, and the master hands them to the agent, whose new tasks of the component
wait for them (``arriving``: they start as a rescale's new tasks do, from their share).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..api import Topology
from ..api._config import HANDOVER, SITES
from ..plan._domains import OUTBOX_PREFIX
from ..plan._fence_streams import FENCE_FOR, FENCE_STREAM
from ..state import KeyedState, State
from ..state._state import dump_snapshot, load_snapshot
from ..wire import encode
from ._fence import FENCE_START, fence_values
from ._rescale import rescale


def _fence_for(new: Topology, component: str) -> tuple[str, str, str] | None:
    """A sink's (moved component, sites field, where it goes), or None."""
    fence = new.component(component).config.get(FENCE_FOR)
    if not isinstance(fence, (list, tuple)) or len(fence) != 3:
        return None
    moved, field, to = fence
    return str(moved), str(field), str(to)


def fence_snapshots(
    new: Topology,
    starting: Mapping[int, tuple[str, bytes | None]],
    old_ids: Mapping[str, list[int]],
    snapshot: Callable[[int], bytes | None],
    revision: int,
    at: int,
    labels: Mapping[str, str],
) -> dict[int, bytes]:
    """Starting task -> its start snapshot, for each outbox sink that carries the fence of a
    component leaving for the cloud: ``starting`` the new revision's starting tasks here
    (component, its own snapshot at ``at`` or None), ``old_ids`` the old revision's task
    ids by component, ``snapshot(task)`` a task's snapshot at the switch checkpoint."""
    out: dict[int, bytes] = {}
    for task, (component, own) in starting.items():
        fence = _fence_for(new, component)
        if fence is None or fence[2] != "cloud":
            continue
        moved, field, _ = fence
        site = labels.get(field) if field else ""
        state: bytes | None = None
        error = ""
        if site is None:
            error = f"this agent has no label {field!r} (the sites field of {moved!r})"
        elif field:
            try:
                blobs = [snapshot(t) for t in old_ids.get(moved, [])]
                if any(b is not None for b in blobs):
                    state = rescale(moved, blobs, 0, 1)  # every task's keys in one
            except Exception as exc:  # its state cannot leave: the cloud says why
                error = str(exc)
        row = [FENCE_STREAM, fence_values(revision, at, site or "", state, error, "cloud")]
        mine, keyed = State(), dict[str, KeyedState]()
        if own is not None:  # a sink that goes on: what it sealed, and the fence first
            mine, keyed, _ = load_snapshot(own)
        mine[FENCE_START] = row
        out[task] = dump_snapshot(mine, keyed)
    return out


def arriving(new: Topology, component: str) -> bool:
    """Whether ``component`` of an agent's new subgraph is a keyed one moved from the cloud,
    whose tasks start from the keys the cloud hands over."""
    spec = new.component(component)
    return spec.config.get(HANDOVER) == "cloud" and isinstance(spec.config.get(SITES), str)


def retiring_fences(
    new: Topology,
    retiring: Mapping[str, list[int]],
    revision: int,
    at: int,
    labels: Mapping[str, str],
) -> dict[int, bytes]:
    """Retiring outbox sink task -> its last row (msgpack), where a component that reads its
    stream arrives from the cloud: ``retiring`` the retiring tasks by component."""
    sinks: dict[str, str] = {}  # sink -> the moved component's sites field
    for spec in new.components:
        fence = _fence_for(new, spec.name)
        if fence is not None and fence[2] == "edge":  # the input still crosses
            sinks[spec.name] = fence[1]
        elif arriving(new, spec.name):  # only the moved component read it
            for inp in spec.inputs:
                sinks.setdefault(OUTBOX_PREFIX + inp.component, str(spec.config.get(SITES)))
    out: dict[int, bytes] = {}
    for sink, field in sinks.items():
        site = labels.get(field) if field else ""
        error = "" if site is not None else f"this agent has no label {field!r}"
        values = fence_values(revision, at, site or "", None, error, "edge")
        for task in retiring.get(sink, []):
            out[task] = encode([FENCE_STREAM, values])
    return out
