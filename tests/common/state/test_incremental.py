"""Incremental snapshots: an instance's deltas (SnapshotLog), the store's bases and
staged deltas (fold, snapshot), a restore with later uncompleted deltas present."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from headwater.common.api._state import UntrackedKeyedState
from headwater.common.state import CheckpointStore, CorruptCheckpointError
from headwater.common.state._state import (
    KeyedState,
    SnapshotLog,
    State,
    dump_snapshot,
    load_delta,
    load_snapshot,
)


def _whole(
    store: CheckpointStore, checkpoint: int, task: int
) -> tuple[dict[Any, Any], dict[str, dict[Any, Any]]]:
    state, keyed, _ = load_snapshot(store.snapshot(checkpoint, task))
    return dict(state), {n: dict(k) for n, k in keyed.items()}


def test_keyed_state_notes_written_deleted_and_mutable_values() -> None:
    ks = KeyedState({"a": 1, "b": [1], "c": 3})
    assert ks._dirty == set() and ks._mutable == {"b"}
    assert ks["a"] == 1 and ks.get("c") == 3 and ks.get("zz") is None
    assert ks._dirty == set()
    ks["d"] = 4
    del ks["a"]
    ks.put("e", Counter())
    ks["b"] = 2  # no longer mutable
    assert ks._dirty == {"d", "a", "e", "b"} and ks._mutable == {"e"}
    ks.clear()
    assert ks._dirty == {"a", "b", "c", "d", "e"} and len(ks) == 0 and ks._mutable == set()


def test_hot_path_accessors_note_keys_across_snapshots() -> None:
    """``accessors()`` are bound once (a reduce step's): the keys they write reach every
    delta after the first, since a snapshot empties the dirty set in place."""
    log, ks = SnapshotLog(), KeyedState({"a": 1})
    get, put = ks.accessors()
    put("b", 2)
    put("c", [3])
    assert get("b", None) == 2 and get("zz", 0) == 0
    assert ks._dirty == {"b", "c"} and ks._mutable == {"c"}
    log.dump(1, State(), {"n": ks})  # whole
    log.committed(1)
    assert ks._dirty == set()
    put("a", 10)
    put("c", 4)  # no longer mutable
    assert ks._mutable == set()
    d = load_delta(log.dump(2, State(), {"n": ks}))
    assert d["keyed"] == {"n": {"a": 10, "c": 4}}
    put("d", 5)
    log.committed(2)
    d = load_delta(log.dump(3, State(), {"n": ks}))
    assert d["keyed"] == {"n": {"a": 10, "c": 4, "d": 5}}  # since checkpoint 1, the base


def test_mutable_values_are_in_every_delta() -> None:
    log, ks = SnapshotLog(), KeyedState({"n": 1, "window": []})
    log.dump(1, State(), {"w": ks})
    log.committed(1)
    window = ks["window"]  # held across records, changed without writing the key
    window.append(1)
    for ck in (2, 3, 4):
        log.committed(ck - 1)
        d = load_delta(log.dump(ck, State(), {"w": ks}))
        assert d["keyed"] == {"w": {"window": [1]}}


def test_first_snapshot_is_whole_then_deltas_since_the_second_newest_commit() -> None:
    log, state = SnapshotLog(), State({"offset": 0})
    ks = KeyedState({"old": 1})  # restored: not dirty, still in the first (whole) snapshot
    ks["x"] = 1
    d1 = load_delta(log.dump(1, state, {"count": ks}))
    assert d1["reset"] and d1["keyed"] == {"count": {"old": 1, "x": 1}}
    ks["w"] = 0
    d = load_delta(log.dump(2, state, {"count": ks}))  # none committed yet: whole again
    assert d["reset"] and d["keyed"] == {"count": {"old": 1, "x": 1, "w": 0}}
    log.committed(1)
    ks["y"] = 2
    d3 = load_delta(log.dump(3, state, {"count": ks}))
    assert not d3["reset"] and d3["base"] == 1  # since 1: w (after 1 and before 2) and y
    assert d3["keyed"] == {"count": {"w": 0, "y": 2}} and d3["deleted"] == {"count": []}
    log.committed(2)
    log.committed(3)  # the store folds up to 2 at this commit: deltas since 2
    ks["z"] = 3
    del ks["x"]
    d4 = load_delta(log.dump(4, state, {"count": ks}))
    assert d4["base"] == 2
    assert d4["keyed"] == {"count": {"y": 2, "z": 3}} and d4["deleted"] == {"count": ["x"]}
    log.committed(4)  # now since 3
    state["offset"] = 9
    d5 = load_delta(log.dump(5, state, {"count": ks}))
    assert d5["base"] == 3 and d5["keyed"] == {"count": {"z": 3}}
    assert d5["state"] == {"offset": 9}


def test_unstable_keys_send_their_name_whole() -> None:
    log = SnapshotLog()
    ks, other = KeyedState(), KeyedState()
    log.dump(1, State(), {"f": ks, "s": other})
    log.committed(1)
    ks[frozenset({"a", "b"})] = 1
    ks[1.5] = 2
    other["k"] = 1
    d = load_delta(log.dump(2, State(), {"f": ks, "s": other}))
    assert d["full"] == ["f"]
    assert d["keyed"]["f"] == {frozenset({"a", "b"}): 1, 1.5: 2}
    assert d["keyed"]["s"] == {"k": 1}


def test_a_state_that_notes_nothing_is_sent_whole() -> None:
    """Only an exactly-once task snapshots, and its keyed state notes what it writes; one that
    notes nothing (``UntrackedKeyedState``), were it ever snapshot, goes whole, never as an
    empty delta."""
    log, ks, other = SnapshotLog(), UntrackedKeyedState({"a": 1}), KeyedState()
    log.dump(1, State(), {"u": ks, "t": other})
    log.committed(1)
    ks["b"] = 2
    other["k"] = 1
    d = load_delta(log.dump(2, State(), {"u": ks, "t": other}))
    assert d["full"] == ["u"] and d["keyed"] == {"u": {"a": 1, "b": 2}, "t": {"k": 1}}


def _run(store: CheckpointStore, log: SnapshotLog, ck: int, ks: KeyedState, task: int = 0) -> None:
    store.save(ck, task, log.dump(ck, State({"at": ck}), {"count": ks}))


def test_restore_any_kept_checkpoint_with_later_uncompleted_deltas(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        log, ks = SnapshotLog(), KeyedState()
        expected: dict[int, dict[Any, Any]] = {}
        for ck in range(1, 9):
            ks[ck % 3] = ck
            ks[f"k{ck}"] = Counter({"n": ck})
            if ck == 5:
                del ks["k1"]
            _run(store, log, ck, ks)
            expected[ck] = dict(ks)
            if ck <= 6:  # 7 and 8 never complete: their deltas stay staged
                log.committed(ck)
                keep_from = ck - 1 if ck > 1 else 1
                store.fold(keep_from)
                store.prune(keep_from)
        # the base is folded to 5 (the second newest complete), 6 staged after it
        for ck in (5, 6, 7, 8):
            state, keyed = _whole(store, ck, 0)
            assert state == {"at": ck}
            assert keyed == {"count": expected[ck]}
        with pytest.raises(CorruptCheckpointError, match="older than its base"):
            store.snapshot(4, 0)
        # a restore to 6 (8 never completed), then the restarted instance's first
        # snapshot is whole: 7 and 8 of the old epoch are never read again
        _, keyed = _whole(store, 6, 0)
        log2, ks2 = SnapshotLog(), KeyedState(keyed["count"])
        ks2["after"] = 1
        _run(store, log2, 9, ks2)
        log2.committed(9)
        ks2["again"] = 2
        _run(store, log2, 10, ks2)
        assert _whole(store, 10, 0)[1] == {"count": {**expected[6], "after": 1, "again": 2}}
        store.fold(9)
        store.prune(9)
        assert _whole(store, 9, 0)[1] == {"count": {**expected[6], "after": 1}}
        assert _whole(store, 10, 0)[1] == {"count": {**expected[6], "after": 1, "again": 2}}
    finally:
        store.close()


def test_a_corrupt_or_missing_delta_in_the_chain_fails_the_restore(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        log, ks = SnapshotLog(), KeyedState()
        for ck in (1, 2, 3):
            ks[ck] = ck
            _run(store, log, ck, ks, task=4)
            log.committed(ck)
        assert load_delta(store.load(3, 4))["base"] == 1
        store.corrupt(1, 4)  # the whole first snapshot: 2 and 3 build on it
        with pytest.raises(CorruptCheckpointError, match="checkpoint 1 of task 4"):
            store.snapshot(3, 4)
        with pytest.raises(CorruptCheckpointError, match=r"checkpoint 3 .*task 5"):
            store.snapshot(3, 5)
    finally:
        store.close()


def test_fold_is_per_task_and_idempotent(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        logs = {0: SnapshotLog(), 1: SnapshotLog()}
        states = {0: KeyedState(), 1: KeyedState()}
        for ck in (1, 2, 3):
            for task in (0, 1):
                states[task][(task, ck)] = ck
                _run(store, logs[task], ck, states[task], task=task)
                logs[task].committed(ck)
        store.fold(2)
        store.fold(2)
        store.fold(1)  # older than the base: nothing
        store.prune(2)
        assert store.checkpoints() == [2, 3]
        for task in (0, 1):
            assert _whole(store, 2, task)[1] == {"count": {(task, 1): 1, (task, 2): 2}}
            assert _whole(store, 3, task)[1] == {"count": dict(states[task])}
        store.close()
        store = CheckpointStore(tmp_path / "ckpt")  # the base is durable
        assert _whole(store, 3, 1)[1] == {"count": dict(states[1])}
    finally:
        store.close()


def test_a_whole_snapshot_of_before_deltas_still_restores(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path / "ckpt")
    try:
        store.save(3, 1, dump_snapshot(State({"n": 1}), {"count": KeyedState({"a": 2})}))
        assert _whole(store, 3, 1) == ({"n": 1}, {"count": {"a": 2}})
        store.fold(3)
        assert _whole(store, 3, 1) == ({"n": 1}, {"count": {"a": 2}})
    finally:
        store.close()
