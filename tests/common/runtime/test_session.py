"""The master session hands each command to the handler of its kind, and calls quietly when away."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from headwater.common.runtime._session import MasterSession, wait_for_address
from headwater.common.runtime._telemetry import Telemetry
from headwater.common.wire.proto import runtime_pb2 as pb

from ._container_kit import RecordingStreamManager


def _session() -> MasterSession:
    telemetry = Telemetry("t", 0, 1, RecordingStreamManager(), dict)
    return MasterSession("127.0.0.1:9", "t", 0, 1, telemetry)


def test_each_command_goes_to_the_handler_of_its_kind() -> None:
    session = _session()
    seen: list[tuple[str, int]] = []

    async def on_commit(c: pb.Command) -> None:
        seen.append(("commit", c.commit.id))

    async def on_checkpoint(c: pb.Command) -> None:
        seen.append(("checkpoint", c.checkpoint.id))

    session.handlers = {"commit": on_commit, "checkpoint": on_checkpoint}

    async def run() -> None:
        await session.dispatch(pb.Command(checkpoint=pb.TakeCheckpoint(id=4)))
        await session.dispatch(pb.Command(commit=pb.Commit(id=4)))
        await session.dispatch(pb.Command(restore=pb.Restore(checkpoint_id=2)))  # none here
        await session.dispatch(pb.Command())  # an empty command

    asyncio.run(run())
    assert seen == [("checkpoint", 4), ("commit", 4)]


def test_calls_while_not_registered_do_nothing_and_a_failure_report_says_it_was_not_told() -> None:
    session = _session()

    async def run() -> bool:
        await session.ack_restore(pb.Restore(epoch=1), ok=True)
        await session.ack_switch(2, ok=False, error="x")
        await session.ack_checkpoint(1, 3, 1, 10)
        await session.put_state(2, "sink", 1, 3, b"")
        return await session.report_failure("task 1 exited with 1", 1)

    assert asyncio.run(run()) is False


def test_a_container_started_beside_its_master_waits_for_the_address_it_writes(
    tmp_path: Path,
) -> None:
    """``headwater run`` starts its containers while their master starts: the address comes
    from the master's ready file, once it is there (written atomically)."""
    ready = tmp_path / "tmaster.json"

    async def run() -> str:
        waiting = asyncio.get_running_loop().create_task(wait_for_address(ready))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # nothing yet: it looks again, never fails
        tmp = tmp_path / "tmaster.json.tmp"
        tmp.write_text(json.dumps({"grpc": "127.0.0.1:4100", "http": "http://127.0.0.1:1"}))
        tmp.rename(ready)
        return await asyncio.wait_for(waiting, 10)

    assert asyncio.run(run()) == "127.0.0.1:4100"
