"""A moved component's keyed state split by site and merged from sites (issue 37): every key
reaches the task that routes it, once; a key two sites hold, state outside keyed state and a
key no record carried are refused with the reason."""

from __future__ import annotations

import pytest

from headwater.common.plan._routing import key_hash
from headwater.common.runtime._handover import (
    SITES_STATE,
    HandoverError,
    merge_sites,
    split_by_site,
)
from headwater.common.state import KeyedState, State
from headwater.common.state._state import dump_snapshot, load_snapshot

SENSORS = {f"s{i}": ("plant-1" if i % 3 else "plant-2") for i in range(30)}
WINDOWS = {s: [i, i * 2.0] for i, s in enumerate(SENSORS)}


def _task(index: int, of: int, plain: dict[str, int] | None = None) -> bytes:
    mine = [s for s in SENSORS if key_hash(s) % of == index]
    keyed = {
        "windows": KeyedState({s: WINDOWS[s] for s in mine}),
        SITES_STATE: KeyedState({s: SENSORS[s] for s in mine}),
    }
    return dump_snapshot(State(plain), keyed)


def _keyed(blob: bytes) -> dict[str, dict[str, object]]:
    _, keyed, _ = load_snapshot(blob)
    return {name: dict(values) for name, values in keyed.items()}


def test_the_cloud_tasks_state_goes_to_each_site_and_back() -> None:
    # cloud -> edge: three cloud tasks' state, one snapshot per site
    per_site = split_by_site("windows", [_task(t, 3) for t in range(3)] + [None])
    assert sorted(per_site) == ["plant-1", "plant-2"]
    for site, blob in per_site.items():
        keyed = _keyed(blob)
        assert keyed["windows"] == {s: w for s, w in WINDOWS.items() if SENSORS[s] == site}
        assert set(keyed[SITES_STATE].values()) == {site}
        # each agent's two tasks take the keys their grouping routes to them, every one once
        got: dict[str, object] = {}
        for index in range(2):
            mine = _keyed(merge_sites("windows", {site: blob}, index, 2))["windows"]
            assert all(key_hash(k) % 2 == index for k in mine)
            assert not set(mine) & set(got)
            got.update(mine)
        assert got == keyed["windows"]
    # edge -> cloud: every site's state merged into four cloud tasks
    merged: dict[str, object] = {}
    for index in range(4):
        merged.update(
            _keyed(merge_sites("windows", {**per_site, "idle": None}, index, 4))["windows"]
        )
    assert merged == WINDOWS


def test_a_key_two_sites_hold_is_refused() -> None:
    a = dump_snapshot(State(), {"w": KeyedState({"s1": 1}), SITES_STATE: KeyedState({"s1": "a"})})
    b = dump_snapshot(State(), {"w": KeyedState({"s1": 2}), SITES_STATE: KeyedState({"s1": "b"})})
    with pytest.raises(HandoverError, match="'s1' has state at site 'a' and at site 'b'"):
        merge_sites("w", {"a": a, "b": b}, 0, 1)


def test_state_that_belongs_to_no_site_is_refused() -> None:
    with pytest.raises(HandoverError, match=r"outside keyed_state.*'offset'"):
        split_by_site("windows", [_task(0, 1, {"offset": 3})])
    stray = dump_snapshot(State(), {"w": KeyedState({"total": 1}), SITES_STATE: KeyedState()})
    with pytest.raises(HandoverError, match="under the key 'total', which no record"):
        split_by_site("w", [stray])
