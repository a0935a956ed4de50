"""headwater.common.state._state: State, KeyedState and snapshots."""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import MutableMapping

from headwater.common.state import KeyedState, State
from headwater.common.state._state import dump_snapshot, load_snapshot


def test_state_is_a_mutable_mapping() -> None:
    s = State({"a": 1})
    assert isinstance(s, MutableMapping)
    s["b"] = 2
    assert s["a"] == 1
    assert len(s) == 2
    assert list(s) == ["a", "b"]
    assert "b" in s
    del s["a"]
    assert dict(s) == {"b": 2}
    assert s.setdefault("c", []) == []
    assert repr(State({"x": 1})) == "State({'x': 1})"


def test_state_copies_its_initial_data() -> None:
    data = {"a": 1}
    s = State(data)
    s["a"] = 2
    assert data == {"a": 1}
    assert len(State()) == 0


def test_heronpy_api() -> None:
    s = State()
    s.put("k1", 10)
    s.put(("site", 3), "v")
    assert s.get("k1") == 10
    assert s.get(("site", 3)) == "v"
    assert s.get("missing") is None
    assert s.get("missing", 5) == 5
    assert list(s.enumerate()) == [(0, "k1"), (1, ("site", 3))]
    s.clear()
    assert len(s) == 0
    assert list(s.enumerate()) == []


def test_keyed_state_is_a_state() -> None:
    k = KeyedState({"x": 1})
    assert isinstance(k, State)
    k.put("y", 2)
    assert dict(k) == {"x": 1, "y": 2}


def test_snapshot_round_trip_with_arbitrary_values() -> None:
    state = State()
    state["counts"] = Counter({"a": 3, "b": 1})
    state[("site", 7)] = (1.5, "x")
    state["window"] = deque([1, 2, 3], maxlen=5)
    keyed = {
        "per_sensor": KeyedState({("s1", 2): Counter("aab"), 42: [1, 2]}),
        "empty": KeyedState(),
    }
    blob = dump_snapshot(state, keyed, extra={"offset": 9})
    assert isinstance(blob, bytes)

    state2, keyed2, extra = load_snapshot(blob)
    assert isinstance(state2, State)
    assert not isinstance(state2, KeyedState)
    assert state2 is not state
    assert dict(state2) == dict(state)
    assert isinstance(state2["counts"], Counter)
    assert state2["counts"]["a"] == 3
    assert state2[("site", 7)] == (1.5, "x")
    assert state2["window"].maxlen == 5
    assert set(keyed2) == {"per_sensor", "empty"}
    assert all(isinstance(k, KeyedState) for k in keyed2.values())
    assert dict(keyed2["per_sensor"]) == {("s1", 2): Counter({"a": 2, "b": 1}), 42: [1, 2]}
    assert len(keyed2["empty"]) == 0
    assert extra == {"offset": 9}


def test_snapshot_is_independent_of_live_state() -> None:
    state = State({"n": [1]})
    blob = dump_snapshot(state, {})
    state["n"].append(2)
    state["m"] = 1
    restored, keyed, extra = load_snapshot(blob)
    assert dict(restored) == {"n": [1]}
    assert keyed == {}
    assert extra is None
