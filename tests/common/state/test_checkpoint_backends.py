"""The checkpoint store's contract on both backends (local RocksDB; RocksDB shared through a
real Garage): save, publish, commit (fold and prune), restore; and what only the shared one
does: restore on another host, its object layout, checksums, a server that is down, and
namespaces that never meet."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.common.state import CorruptCheckpointError
from headwater.common.state._checkpoints import Checkpoints, LocalCheckpoints
from headwater.common.state._s3 import StoreUnavailable
from headwater.common.state._shared_store import MAX_DELTAS, S3Checkpoints, _Remote
from headwater.common.state._state import KeyedState, SnapshotLog, State, load_snapshot

from ..._garage import Garage

TASKS = (3, 7)
KEYS = 200  # a task's state: many keys, of which a checkpoint changes a few


class _Tasks:
    """Instances' state across checkpoints: each checkpoint changes a few keys of each task."""

    def __init__(self) -> None:
        self.logs = {t: SnapshotLog() for t in TASKS}
        self.keyed = {t: KeyedState({f"k{i}": 0 for i in range(KEYS)}) for t in TASKS}
        self.expected: dict[int, dict[int, dict[str, Any]]] = {}
        self.complete: list[int] = []

    async def checkpoint(self, store: Checkpoints, ck: int) -> None:
        for t in TASKS:
            ks = self.keyed[t]
            for i in range(5):
                ks[f"k{(ck * 5 + i) % KEYS}"] = ck * 100 + t
            if ck % 4 == 0:
                del ks[f"k{ck % KEYS}"]
            blob = self.logs[t].dump(ck, State({"at": ck, "task": t}), {"count": ks})
            store.save(ck, t, blob)
            await store.async_publish(ck, t, blob)
        self.expected[ck] = {t: dict(self.keyed[t]) for t in TASKS}

    async def commit(self, store: Checkpoints, ck: int) -> None:
        """Checkpoint ``ck`` completed: the master's commit (keep the second newest)."""
        self.complete.append(ck)
        for t in TASKS:
            self.logs[t].committed(ck)
        store.commit(self.complete[-2] if len(self.complete) >= 2 else ck)
        if isinstance(store, S3Checkpoints):
            await store.async_idle()

    async def run(self, store: Checkpoints, first: int, last: int) -> None:
        for ck in range(first, last + 1):
            await self.checkpoint(store, ck)
            await self.commit(store, ck)

    def check(self, snapshots: dict[int, bytes | None], ck: int) -> None:
        assert sorted(snapshots) == sorted(TASKS)
        for t, blob in snapshots.items():
            assert blob is not None
            state, keyed, _ = load_snapshot(blob)
            assert dict(state) == {"at": ck, "task": t}
            assert dict(keyed["count"]) == self.expected[ck][t]


def _shared(garage: Garage, folder: Path, namespace: str = "c/iot/0") -> S3Checkpoints:
    return S3Checkpoints(folder, garage.objects(), namespace)


@pytest.mark.parametrize("backend", ["local", "s3"])
def test_the_contract_on_both_backends(backend: str, tmp_path: Path, request: Any) -> None:
    if backend == "local":
        store: Checkpoints = LocalCheckpoints(tmp_path / "state")
    else:
        store = _shared(request.getfixturevalue("garage"), tmp_path / "state")
    tasks = _Tasks()

    async def run() -> None:
        assert await store.async_restore(0, list(TASKS)) == {3: None, 7: None}  # a clean start
        await tasks.run(store, 1, 9)
        await tasks.checkpoint(store, 10)  # taken, never completed
        tasks.check(await store.async_restore(9, list(TASKS)), 9)  # the latest complete
        tasks.check(await store.async_restore(8, list(TASKS)), 8)  # the one kept before it
        # older than the fold: no restore asks for it; the local store has it no more, the
        # bucket may still (its base is older), and then it is right
        if backend == "local":
            with pytest.raises(CorruptCheckpointError, match="older than its base"):
                await store.async_restore(6, list(TASKS))
        else:
            tasks.check(await store.async_restore(6, list(TASKS)), 6)
            tasks.check(await store.async_restore(9, list(TASKS)), 9)  # from the bucket again
        assert load_snapshot(store.snapshot(9, 3))[1]["count"] == tasks.expected[9][3]

    try:
        asyncio.run(run())
    finally:
        store.close()


def test_a_container_on_another_host_restores_from_the_bucket(
    garage: Garage, tmp_path: Path
) -> None:
    tasks = _Tasks()

    async def run() -> None:
        first = _shared(garage, tmp_path / "host-a")
        await first.async_restore(0, list(TASKS))
        await tasks.run(first, 1, 12)
        await tasks.checkpoint(first, 13)  # not complete when host a is lost
        first.close()
        # host b: an empty disk; it reads the last complete checkpoint from the bucket
        second = _shared(garage, tmp_path / "host-b")
        started = time.perf_counter()
        tasks.check(await second.async_restore(12, list(TASKS)), 12)
        print(f"restore from the bucket: {(time.perf_counter() - started) * 1000:.1f} ms")
        # and goes on from there: the instances' next snapshots are whole, then deltas
        tasks.logs = {t: SnapshotLog() for t in TASKS}
        tasks.complete = [12]
        await tasks.run(second, 13, 20)
        second.close()
        # host a comes back with its stale copy (checkpoints up to 13 of its own): the
        # bucket's owner is host b's store, so host a reads the bucket's, not its own
        again = _shared(garage, tmp_path / "host-a")
        tasks.check(await again.async_restore(20, list(TASKS)), 20)
        again.close()

    asyncio.run(run())


def test_the_bucket_holds_one_base_and_the_deltas_after_it_per_task(
    garage: Garage, tmp_path: Path
) -> None:
    tasks = _Tasks()
    store = _shared(garage, tmp_path / "state", "prod/c1/iot/4")

    async def run() -> None:
        await store.async_restore(0, list(TASKS))
        await tasks.run(store, 1, 40)

    asyncio.run(run())
    keys = garage.objects().listing("prod/c1/iot/4/")
    assert keys.pop("prod/c1/iot/4/owner") == 32  # a local store's id
    remote = store._index(keys)
    assert sorted(remote) == list(TASKS)
    for t in TASKS:
        [base] = remote[t].bases  # the older ones deleted once it was up
        assert all(c > base for c in remote[t].deltas) and max(remote[t].deltas) == 40
        assert len(remote[t].deltas) < MAX_DELTAS
        assert not remote[t].due()
    # the whole state went up far less often than each commit: deltas are small beside it
    assert 2 * len(TASKS) <= store.rebased < 40 * len(TASKS) // 3
    store.close()


def test_a_rebase_is_due_when_the_deltas_outweigh_the_base_or_are_many() -> None:
    assert not _Remote().due()
    assert _Remote(deltas={1: 10}).due()  # no base yet
    assert not _Remote(bases={5: 100}, deltas={5: 1, 6: 60, 7: 40}).due()  # 100: not more
    assert _Remote(bases={5: 100}, deltas={6: 60, 7: 41}).due()
    assert _Remote(bases={5: 10**9}, deltas=dict.fromkeys(range(6, 6 + MAX_DELTAS), 1)).due()


def test_a_snapshot_that_fails_its_checksum_in_the_bucket_is_found(
    garage: Garage, tmp_path: Path
) -> None:
    tasks = _Tasks()

    async def run() -> None:
        first = _shared(garage, tmp_path / "a")
        await first.async_restore(0, list(TASKS))
        await tasks.run(first, 1, 6)
        first.close()
        objects = garage.objects()
        key = first.key(7, "delta", 6)
        raw = bytearray(objects.get(key))
        raw[-1] ^= 0xFF
        objects.put(key, bytes(raw))
        second = _shared(garage, tmp_path / "b")
        with pytest.raises(CorruptCheckpointError, match=f"{key} in the shared store fails"):
            await second.async_restore(6, list(TASKS))
        objects.delete([key])  # gone altogether: the chain says what is missing
        with pytest.raises(CorruptCheckpointError, match="no delta for checkpoint 6"):
            await second.async_restore(6, list(TASKS))
        second.close()

    asyncio.run(run())


def test_a_server_that_is_down_fails_saves_and_restores_it_can_retry(
    garage: Garage, tmp_path: Path
) -> None:
    tasks = _Tasks()

    async def run() -> None:
        store = _shared(garage, tmp_path / "a")
        await store.async_restore(0, list(TASKS))
        await tasks.run(store, 1, 3)
        garage.crash()
        started = time.monotonic()
        with pytest.raises(StoreUnavailable, match="cannot reach it"):
            await tasks.checkpoint(store, 4)
        assert time.monotonic() - started < 10  # a connection refused, retried twice
        other = _shared(garage, tmp_path / "b")
        with pytest.raises(StoreUnavailable):  # not a corrupt checkpoint: ask again later
            await other.async_restore(3, list(TASKS))
        garage.start()
        tasks.check(await other.async_restore(3, list(TASKS)), 3)
        store.close()
        other.close()

    asyncio.run(run())


def test_namespaces_never_meet_and_a_clean_start_empties_its_own(
    garage: Garage, tmp_path: Path
) -> None:
    async def run() -> None:
        one, two = _Tasks(), _Tasks()
        a = _shared(garage, tmp_path / "a", "c/iot/0")
        b = _shared(garage, tmp_path / "b", "c/iot2/0")
        for store, tasks in ((a, one), (b, two)):
            await store.async_restore(0, list(TASKS))
            await tasks.run(store, 1, 3)
        assert await a.async_restore(0, list(TASKS)) == {3: None, 7: None}  # resubmitted
        objects = garage.objects()
        assert sorted(objects.listing("c/iot/")) == ["c/iot/0/owner"]
        assert len(objects.listing("c/iot2/")) > 1
        two.check(await b.async_restore(3, list(TASKS)), 3)
        a.close()
        b.close()

    asyncio.run(run())
