"""Incremental snapshots on the checkpoint store alone: what each step costs for N keys.

    python -m bench.snapshot_store 1000000

Builds a task's whole snapshot of N keys (64-character values), folds it into the
store's base, changes 4,000 keys, builds and folds that delta, and builds a restore's
blob (base and delta), next to a full snapshot as before deltas (``dump_snapshot``).
"""

from __future__ import annotations

import sys
import tempfile
import time
from collections.abc import Callable
from typing import TypeVar

from headwater.common.state import CheckpointStore
from headwater.common.state._state import (
    KeyedState,
    SnapshotLog,
    State,
    dump_snapshot,
    load_snapshot,
)

T = TypeVar("T")


def main(n: int) -> None:
    store = CheckpointStore(tempfile.mkdtemp(prefix="hw-bench-store-"))
    try:
        log, ks = SnapshotLog(), KeyedState({k: f"{k:064d}" for k in range(n)})
        ms: dict[str, float] = {}

        def timed(name: str, fn: Callable[[], T]) -> T:
            t = time.perf_counter()
            out = fn()
            ms[name] = (time.perf_counter() - t) * 1000
            return out

        whole = timed("whole snapshot", lambda: log.dump(1, State(), {"values": ks}))
        store.save(1, 0, whole)
        log.committed(1)
        timed("fold of the whole snapshot", lambda: store.fold(1))
        for k in range(4000):
            ks[k] = "x"
        delta = timed("delta of 4,000 keys", lambda: log.dump(2, State(), {"values": ks}))
        store.save(2, 0, delta)
        blob = timed("restore blob (base + delta)", lambda: store.snapshot(2, 0))
        timed("unpickle it in the instance", lambda: load_snapshot(blob))
        timed("fold of the delta", lambda: store.fold(2))
        timed("full snapshot (before deltas)", lambda: dump_snapshot(State(), {"values": ks}))
        print(f"{n:,} keys; delta {len(delta):,} B")
        for name, v in ms.items():
            print(f"  {name}: {v:.1f} ms")
    finally:
        store.close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000)
