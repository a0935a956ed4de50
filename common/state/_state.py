"""Snapshots of an instance's state: what the checkpoint store keeps.

Live state (``State``, ``KeyedState``, in ``headwater.common.api``) is an
in-memory dict (cheap per record); the checkpoint store keeps snapshots in
RocksDB. Snapshots are pickled: the store is local, and heronpy users keep
arbitrary objects (Counter, deque) in state; a process that must not run a
topology's code reads them as plain values only (``_plain.py``).
"""

from __future__ import annotations

import pickle
from typing import Any

from ..api._state import KeyedState, State, StatefulComponent
from ._plain import loads

__all__ = [
    "KeyedState",
    "SnapshotLog",
    "State",
    "StatefulComponent",
    "dump_snapshot",
    "load_delta",
    "load_snapshot",
    "stable_key",
]


def dump_snapshot(state: State, keyed: dict[str, KeyedState], extra: Any = None) -> bytes:
    return pickle.dumps(
        {"state": state._data, "keyed": {n: k._data for n, k in keyed.items()}, "extra": extra},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def load_snapshot(blob: bytes) -> tuple[State, dict[str, KeyedState], Any]:
    data = loads(blob)
    keyed = {name: KeyedState(values) for name, values in data["keyed"].items()}
    return State(data["state"]), keyed, data.get("extra")


# -- incremental snapshots ------------------------------------------------------------
# A delta is a pickled dict: "state" (the whole State: small, sent every time),
# "keyed" ({name: {key: value}} written since ``base``), "deleted" ({name: [key]}),
# "full" (names sent whole: their changed keys do not all have a stable encoding),
# "base" (the checkpoint it is relative to) and "reset" (True: relative to nothing,
# the whole state). A delta relative to ``base`` applied to the state as of any
# checkpoint F with base <= F <= its own gives its state: every key changed after
# base carries its value as of the delta, and no other changed after F.

# key types whose pickle is one per value (the store keys its per-key entries by it)
_STABLE = frozenset({str, bytes, int, type(None)})


def stable_key(key: Any) -> bool:
    """True if equal keys of this shape always pickle to the same bytes."""
    if key.__class__ is tuple:
        return all(stable_key(k) for k in key)
    return key.__class__ in _STABLE


class SnapshotLog:
    """An instance's side of incremental snapshots: which keys each delta must carry.

    Each snapshot is relative to the second-newest checkpoint this instance
    heard committed (the store folds a task's deltas into its base up to that
    checkpoint, the oldest it may still be asked to restore), so it carries
    every key changed since then. After a start or a restore, snapshots are
    whole (``reset``: the store's base for this task id may be another
    instance's) until one of them is heard committed.
    """

    def __init__(self) -> None:
        self.first = 0  # the first (whole) snapshot (0: not taken yet)
        self.last = 0  # the newest snapshot taken
        self.commits: list[int] = []  # committed checkpoints heard since ``first``, newest last
        # keys changed per interval: (from checkpoint, to checkpoint, {name: keys})
        self.intervals: list[tuple[int, int, dict[str, set[Any]]]] = []

    def committed(self, checkpoint: int) -> None:
        if self.first and checkpoint >= self.first and checkpoint not in self.commits:
            self.commits = [*self.commits[-1:], checkpoint]

    def base(self) -> int:
        return self.commits[-2] if len(self.commits) >= 2 else self.commits[0]

    def dump(self, checkpoint: int, state: State, keyed: dict[str, KeyedState]) -> bytes:
        changed = {}
        for name, ks in keyed.items():
            changed[name] = ks.take_changed()
        if self.last:
            self.intervals.append((self.last, checkpoint, changed))
        self.last = checkpoint
        if not self.commits:
            # whole until one of these is known committed: a delta must build on a
            # snapshot the store is sure to have (this one's save may yet fail)
            self.first = self.first or checkpoint
            return pickle.dumps(
                {
                    "state": state._data,
                    "keyed": {n: k._data for n, k in keyed.items()},
                    "deleted": {},
                    "full": list(keyed),
                    "base": 0,
                    "reset": True,
                },
                protocol=pickle.HIGHEST_PROTOCOL,
            )
        base = self.base()
        self.intervals = [iv for iv in self.intervals if iv[1] > base]
        values: dict[str, dict[Any, Any]] = {}
        deleted: dict[str, list[Any]] = {}
        full: list[str] = []
        for name, ks in keyed.items():
            if not ks.tracked:  # it notes no changes (never so in an exactly-once task): whole
                full.append(name)
                values[name] = ks._data
                continue
            keys: set[Any] = set()
            for _, _, names in self.intervals:
                keys.update(names.get(name, ()))
            keys.update(ks._mutable)  # may have changed in place
            if not all(stable_key(k) for k in keys):
                full.append(name)
                values[name] = ks._data
                continue
            data = ks._data
            values[name] = {k: data[k] for k in keys if k in data}
            deleted[name] = [k for k in keys if k not in data]
        return pickle.dumps(
            {
                "state": state._data,
                "keyed": values,
                "deleted": deleted,
                "full": full,
                "base": base,
                "reset": False,
            },
            protocol=pickle.HIGHEST_PROTOCOL,
        )


def load_delta(blob: bytes) -> dict[str, Any]:
    data: dict[str, Any] = loads(blob)
    if "reset" not in data:  # a whole snapshot (``dump_snapshot``, before deltas)
        keyed = data["keyed"]
        data = {"state": data["state"], "keyed": keyed, "deleted": {}, "full": list(keyed)}
        data.update(base=0, reset=True)
    return data
