"""Snapshots of an instance's state: what the checkpoint store keeps.

Live state (``State``, ``KeyedState``, in ``headwater.common.api``) is an
in-memory dict (cheap per record); the checkpoint store keeps snapshots in
RocksDB. Snapshots are pickled: the store is local and trusted, and heronpy
users keep arbitrary objects (Counter, deque) in state.
"""

from __future__ import annotations

import pickle
from typing import Any

from ..api._state import KeyedState, State, StatefulComponent

__all__ = ["KeyedState", "State", "StatefulComponent", "dump_snapshot", "load_snapshot"]


def dump_snapshot(state: State, keyed: dict[str, KeyedState], extra: Any = None) -> bytes:
    return pickle.dumps(
        {"state": state._data, "keyed": {n: k._data for n, k in keyed.items()}, "extra": extra},
        protocol=pickle.HIGHEST_PROTOCOL,
    )


def load_snapshot(blob: bytes) -> tuple[State, dict[str, KeyedState], Any]:
    data = pickle.loads(blob)
    keyed = {name: KeyedState(values) for name, values in data["keyed"].items()}
    return State(data["state"]), keyed, data.get("extra")
