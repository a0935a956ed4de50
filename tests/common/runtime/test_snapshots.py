"""A restore starts every local instance and hands each its snapshot on hello, then acknowledges."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import cast

from headwater.common.plan import pack_round_robin
from headwater.common.runtime._loaded_revisions import LoadedRevisions, Revision
from headwater.common.runtime._session import MasterSession
from headwater.common.runtime._snapshots import Snapshots
from headwater.common.runtime._supervisor import Supervisor
from headwater.common.runtime._telemetry import Telemetry
from headwater.common.state._checkpoints import LocalCheckpoints
from headwater.common.state._state import KeyedState, State, dump_snapshot, load_snapshot
from headwater.common.wire._control import Restore
from headwater.common.wire.proto import runtime_pb2 as pb

from ._container_kit import TOPOLOGY, FakeProcess, RecordingStreamManager


class _Session(MasterSession):
    def __init__(self, stmgr: RecordingStreamManager) -> None:
        super().__init__("127.0.0.1:9", "t", 0, 1, Telemetry("t", 0, 1, stmgr, dict))
        self.acks: list[tuple[int, int, bool, str]] = []

    async def ack_restore(self, r: pb.Restore, ok: bool, error: str = "") -> None:
        self.acks.append((r.epoch, r.checkpoint_id, ok, error))


def _recovery(tmp_path: Path) -> tuple[Snapshots, RecordingStreamManager, _Session, list[int]]:
    stmgr = RecordingStreamManager()
    started: list[int] = []

    def launch(task: int) -> subprocess.Popen[bytes]:
        started.append(task)
        return cast("subprocess.Popen[bytes]", FakeProcess(task))

    first = Revision(TOPOLOGY, pack_round_robin(TOPOLOGY, 1), "t.py", None)
    revisions = LoadedRevisions(first, 0, tmp_path, None, stmgr)
    session = _Session(stmgr)
    supervisor = Supervisor(launch, stmgr, restart=False)
    rollbacks: list[bool] = []
    recovery = Snapshots(
        str(tmp_path / "state"),
        stmgr,
        supervisor,
        revisions,
        session,
        lambda: rollbacks.append(True),
    )
    return recovery, stmgr, session, started


def test_a_restore_hands_each_instance_its_snapshot_then_acknowledges(tmp_path: Path) -> None:
    recovery, stmgr, session, started = _recovery(tmp_path)
    for task, word in ((1, "one"), (2, "two")):  # whole snapshots, as a first one after a start
        recovery.store.save(3, task, dump_snapshot(State({"w": word}), {"k": KeyedState({})}))
    one, two = recovery.store.snapshot(3, 1), recovery.store.snapshot(3, 2)
    assert [load_snapshot(b)[0]["w"] for b in (one, two)] == ["one", "two"]

    async def run() -> None:
        await recovery.restore(pb.Restore(epoch=1, checkpoint_id=3))
        assert started == [1, 2] and stmgr.epoch == 1
        recovery.on_hello(1)
        assert session.acks == []  # task 2 has not said hello yet
        recovery.on_hello(2)
        await asyncio.sleep(0)  # the acknowledgement is a task on the loop
        await recovery.restore(pb.Restore(epoch=1, checkpoint_id=3))  # repeated: done already
        await recovery.restore(pb.Restore(epoch=0, checkpoint_id=2))  # old: ignored

    asyncio.run(run())
    assert stmgr.sent == [
        (1, Restore(checkpoint=3, blob=one)),
        (2, Restore(checkpoint=3, blob=two)),
    ]
    assert session.acks == [(1, 3, True, ""), (1, 3, True, "")]
    recovery.close()


def test_a_restore_from_no_checkpoint_starts_instances_empty(tmp_path: Path) -> None:
    recovery, stmgr, _, _ = _recovery(tmp_path)

    async def run() -> None:
        await recovery.restore(pb.Restore(epoch=1, checkpoint_id=0))
        recovery.on_hello(1)
        recovery.on_hello(5)  # not one the restore starts

    asyncio.run(run())
    assert stmgr.sent == [(1, Restore(checkpoint=0, blob=None))]
    assert recovery.handout is not None  # task 2 still to come
    recovery.close()


class _Counting(LocalCheckpoints):
    """The local store, counting its syncs (``failing``: a sync that raises)."""

    def __init__(self, folder: str) -> None:
        super().__init__(folder)
        self.syncs, self.reopened, self.failing = 0, 0, False

    def sync(self) -> None:
        self.syncs += 1
        if self.failing:
            raise RuntimeError("IO error: No space left on device")
        super().sync()

    def reopen(self) -> None:
        self.reopened += 1
        super().reopen()


def _acking(tmp_path: Path) -> tuple[Snapshots, _Counting, list[tuple[int, int, int, int, str]]]:
    recovery, stmgr, session, _ = _recovery(tmp_path)
    store = recovery.store = _Counting(str(tmp_path / "counted"))
    acks: list[tuple[int, int, int, int, str]] = []

    async def ack_checkpoint(
        task: int, checkpoint: int, epoch: int, size: int, declined: str = ""
    ) -> None:
        acks.append((task, checkpoint, epoch, size, declined))

    async def ack_checkpoints(batch: list[tuple[int, int, int, int, str]]) -> None:
        acks.append(("one call", len(batch)))  # type: ignore[arg-type]
        acks.extend(batch)

    session.stub = object()  # type: ignore[assignment]  # (registered)
    session.ack_checkpoint = ack_checkpoint  # type: ignore[method-assign]
    session.ack_checkpoints = ack_checkpoints  # type: ignore[method-assign,assignment]
    stmgr.epoch = 4
    return recovery, store, acks


def test_the_snapshots_that_arrive_together_are_synced_once_then_acknowledged(
    tmp_path: Path,
) -> None:
    recovery, store, acks = _acking(tmp_path)

    async def main() -> None:
        for task in (1, 2, 3):
            recovery.on_state(task, 7, b"x" * task)
        assert acks == [] and store.syncs == 0  # nothing said before the sync
        await asyncio.sleep(0.05)
        recovery.on_state(4, 7, b"late")  # a later turn of the loop: a sync of its own
        await asyncio.sleep(0.05)

    asyncio.run(main())
    assert store.syncs == 2
    assert acks == [
        ("one call", 3), (1, 7, 4, 1, ""), (2, 7, 4, 2, ""), (3, 7, 4, 3, ""),
        ("one call", 1), (4, 7, 4, 4, ""),
    ]  # fmt: skip
    assert [store.local.load(7, t) for t in (1, 2, 3)] == [b"x", b"xx", b"xxx"]
    recovery.close()


def test_a_sync_that_fails_declines_every_snapshot_it_held(tmp_path: Path) -> None:
    recovery, store, acks = _acking(tmp_path)
    store.failing = True

    async def main() -> None:
        recovery.on_state(1, 9, b"a")
        recovery.on_state(2, 9, b"b")
        await asyncio.sleep(0.05)

    asyncio.run(main())
    why = "IO error: No space left on device"
    assert acks == [(1, 9, 4, 0, why), (2, 9, 4, 0, why)] and store.reopened == 1
    recovery.close()
