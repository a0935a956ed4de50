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
