"""Keyed state split by site, and merged from sites: a move's state hand-over (issue 37).

A component moved between the edge and the cloud takes its state with it
(docs/design.md, "Moving a subgraph between edge and cloud"). It declares which agent
owns each key (``headwater.placement.sites``); its instances keep, beside its keyed
state, the site of every key they have seen (keyed state ``SITES_STATE``: key -> site).
Cloud -> edge, ``split_by_site`` cuts every cloud task's snapshot into one per site; each
agent's tasks then take theirs with ``merge_sites``, each the keys its fields grouping
routes to it (``key_hash(key) % parallelism == index``, as a rescale does). Edge -> cloud,
``merge_sites`` makes each cloud task's snapshot from every site's. Keys are disjoint
between sites by the declared relation: a key found in two sites' state means it is false,
and the merge refuses (keeping both would count that key's records twice).

The instances keep ``SITES_STATE`` (``_sites.py``). Edge -> cloud, an agent's state comes
in its fence (``_fence.py``), read by ``agent_state`` as plain values only, and each task of
the cloud copy takes its keys (``_handover_bolt.py``); cloud -> edge is not wired yet.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._exceptions import HeadwaterError
from ..plan._routing import key_hash
from ..state import KeyedState, State
from ..state._plain import plain_loads
from ..state._state import dump_snapshot, load_snapshot

SITES_STATE = "__sites__"
"""The keyed state, kept by the runtime, naming each key's site."""


class HandoverError(HeadwaterError):
    """Snapshots that cannot be handed over by site."""


def _keyed_only(component: str, blob: bytes) -> dict[str, KeyedState]:
    state, parts, _ = load_snapshot(blob)
    if len(state):
        names = ", ".join(sorted(map(repr, state))[:3])
        raise HandoverError(
            f"{component!r} keeps state outside keyed_state ({names}), which belongs to no "
            "site and cannot move between edge and cloud: keep that state per key"
        )
    return parts


def agent_state(component: str, blob: bytes) -> dict[str, dict[Any, Any]]:
    """An agent's snapshot of ``component`` (its fence's state) as keyed state name ->
    {key: value}, read as plain values only (an agent's bytes never run code here);
    HandoverError for bytes that are not one, or state outside keyed state."""
    try:
        data = plain_loads(blob)
    except Exception as exc:  # any bytes: a bad pickle raises anything (PlainStateError too)
        raise HandoverError(f"{component!r}: an agent's state that cannot be read: {exc}") from exc
    keyed = data.get("keyed") if type(data) is dict else None
    if type(keyed) is not dict or not all(
        type(n) is str and type(v) is dict for n, v in keyed.items()
    ):
        raise HandoverError(f"{component!r}: an agent's state that is not a snapshot")
    if data.get("state"):
        names = ", ".join(sorted(map(repr, data["state"]))[:3])
        raise HandoverError(
            f"{component!r} keeps state outside keyed_state ({names}), which belongs to no "
            "site and cannot move between edge and cloud: keep that state per key"
        )
    return keyed


def split_by_site(component: str, blobs: Sequence[bytes | None]) -> dict[str, bytes]:
    """Every task's snapshot (None: a task with none) as one snapshot per site: each site's
    keys of every keyed state, with their rows of ``SITES_STATE``."""
    sites: dict[Any, Any] = {}
    parts: list[dict[str, KeyedState]] = []
    for blob in blobs:
        if blob is None:
            continue
        keyed = _keyed_only(component, blob)
        sites.update(keyed.get(SITES_STATE, KeyedState()).items())
        parts.append(keyed)
    out: dict[str, dict[str, KeyedState]] = {}
    for keyed in parts:
        for name, values in keyed.items():
            for key, value in values.items():
                if key not in sites:
                    raise HandoverError(
                        f"{component!r} keeps {name!r} under the key {key!r}, which no record "
                        "it took carried: keyed state is split by site by the key of its "
                        "input's fields grouping, so keep it under that key"
                    )
                out.setdefault(str(sites[key]), {}).setdefault(name, KeyedState())[key] = value
    return {site: dump_snapshot(State(), keyed) for site, keyed in sorted(out.items())}


def merge_sites(
    component: str, blobs: Mapping[str, bytes | None], index: int, parallelism: int
) -> bytes:
    """The snapshot of task ``index`` (of ``parallelism``) from every site's snapshot
    (site -> blob, None: a site with none); HandoverError for a key two sites hold."""
    keyed: dict[str, KeyedState] = {}
    owner: dict[Any, str] = {}
    for site, blob in sorted(blobs.items()):
        if blob is None:
            continue
        for name, values in _keyed_only(component, blob).items():
            mine = keyed.setdefault(name, KeyedState())
            for key, value in values.items():
                if name == SITES_STATE:
                    other = owner.setdefault(key, site)
                    if other != site:
                        raise HandoverError(
                            f"{component!r}: the key {key!r} has state at site {other!r} and "
                            f"at site {site!r}, so its declared key -> site relation is false "
                            "(a key's records must all name one site): nothing was merged"
                        )
                if key_hash(key) % parallelism == index:
                    mine[key] = value
    return dump_snapshot(State(), keyed)
