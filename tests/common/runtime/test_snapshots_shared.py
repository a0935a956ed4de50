"""The snapshot keeper with a shared store (a real Garage): a snapshot is acknowledged once the
bucket has it, declined (never acknowledged) when the bucket cannot take it; a restore waits
for a bucket that is down instead of calling the checkpoint unusable."""

from __future__ import annotations

import asyncio
import subprocess
from pathlib import Path
from typing import Any, cast

from headwater.common.plan import pack_round_robin
from headwater.common.runtime._loaded_revisions import LoadedRevisions, Revision
from headwater.common.runtime._session import MasterSession
from headwater.common.runtime._snapshots import Snapshots
from headwater.common.runtime._supervisor import Supervisor
from headwater.common.runtime._telemetry import Telemetry
from headwater.common.state._shared_store import S3Checkpoints
from headwater.common.state._state import KeyedState, State, dump_snapshot, load_snapshot
from headwater.common.wire.proto import runtime_pb2 as pb

from ..._garage import Garage
from ..._wait import wait_for
from ._container_kit import TOPOLOGY, FakeProcess, RecordingStreamManager


class _Session(MasterSession):
    def __init__(self, stmgr: RecordingStreamManager) -> None:
        super().__init__("127.0.0.1:9", "t", 0, 1, Telemetry("t", 0, 1, stmgr, dict))
        self.stub = cast("Any", object())  # acknowledgements are recorded, not sent
        self.checkpoint_acks: list[tuple[int, int, int, int, str]] = []
        self.restore_acks: list[tuple[int, int, bool]] = []

    async def ack_checkpoint(
        self, task: int, checkpoint: int, epoch: int, size: int, declined: str = ""
    ) -> None:
        self.checkpoint_acks.append((task, checkpoint, epoch, size, declined))

    async def ack_restore(self, r: pb.Restore, ok: bool, error: str = "") -> None:
        self.restore_acks.append((r.epoch, r.checkpoint_id, ok))


def _keeper(garage: Garage, folder: Path) -> tuple[Snapshots, _Session, RecordingStreamManager]:
    stmgr = RecordingStreamManager()

    def launch(task: int) -> subprocess.Popen[bytes]:
        return cast("subprocess.Popen[bytes]", FakeProcess(task))

    first = Revision(TOPOLOGY, pack_round_robin(TOPOLOGY, 1), "t.py", None)
    session = _Session(stmgr)
    keeper = Snapshots(
        S3Checkpoints(folder / "state", garage.objects(timeout_s=2.0), "c/t/0"),
        stmgr,
        Supervisor(launch, stmgr, restart=False),
        LoadedRevisions(first, 0, folder, None, stmgr),
        session,
        lambda: None,
    )
    return keeper, session, stmgr


def _blob(n: int) -> bytes:
    return dump_snapshot(State({"n": n}), {"k": KeyedState({"a": n})})


def test_acknowledged_once_in_the_bucket_declined_when_it_cannot_take_it(
    garage: Garage, tmp_path: Path
) -> None:
    keeper, session, _ = _keeper(garage, tmp_path)

    async def run() -> None:
        await keeper.restore(pb.Restore(epoch=1, checkpoint_id=0))
        keeper.on_state(1, 1, _blob(1))
        keeper.on_state(2, 1, _blob(2))
        assert session.checkpoint_acks == []  # not before the bucket has them
        await asyncio.to_thread(wait_for, lambda: len(session.checkpoint_acks) == 2, 10, "acks")
        assert sorted(session.checkpoint_acks) == [
            (1, 1, 1, len(_blob(1)), ""),
            (2, 1, 1, len(_blob(2)), ""),
        ]
        assert isinstance(keeper.store, S3Checkpoints)
        assert garage.objects().get(keeper.store.key(1, "delta", 1)) is not None
        assert len(keeper.publish_s) == 2 and max(keeper.publish_s) < 2.0

        await asyncio.to_thread(garage.crash)
        keeper.on_state(2, 2, _blob(2))
        await asyncio.to_thread(wait_for, lambda: len(session.checkpoint_acks) == 3, 20, "ack")
        task, checkpoint, epoch, size, declined = session.checkpoint_acks[2]
        assert (task, checkpoint, epoch, size) == (2, 2, 1, 0)
        assert declined.startswith("the shared checkpoint store: s3://checkpoints at http")
        assert "cannot reach it" in declined and garage.secret not in declined

        # a restore while the bucket is down waits for it (the checkpoint is not unusable)
        other, other_session, _ = _keeper(garage, tmp_path / "other")
        attempts: list[int] = []
        ask = other.store.async_restore

        async def counted(checkpoint: int, tasks: list[int]) -> dict[int, bytes | None]:
            attempts.append(checkpoint)
            return await ask(checkpoint, tasks)

        other.store.async_restore = counted  # type: ignore[method-assign]
        restoring = asyncio.get_running_loop().create_task(
            other.restore(pb.Restore(epoch=2, checkpoint_id=1))
        )
        deadline = asyncio.get_running_loop().time() + 20
        while len(attempts) < 3:  # asked again, with backoff
            assert asyncio.get_running_loop().time() < deadline, "no third attempt in 20 s"
            await asyncio.sleep(0.05)
        assert other_session.restore_acks == [] and not restoring.done()  # none either way
        await asyncio.to_thread(garage.start)
        await asyncio.wait_for(restoring, 30)
        assert other.handout is not None
        restored = {t: load_snapshot(b or b"")[0]["n"] for t, b in other.handout.snapshots.items()}
        assert restored == {1: 1, 2: 2}
        other.close()

    try:
        asyncio.run(run())
    finally:
        keeper.close()
