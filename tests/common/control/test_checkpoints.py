"""headwater.common.control._checkpoints: when a checkpoint starts, completes or fails."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from headwater.common._clock import ManualClock
from headwater.common.control._catalogue import Catalogue, CheckpointRecord
from headwater.common.control._checkpoints import CheckpointCoordinator
from headwater.common.wire._states import CheckpointState
from headwater.common.wire.proto import runtime_pb2 as pb


class Containers:
    """Records what the coordinator sends, and the checkpoints it completes."""

    def __init__(self) -> None:
        self.sent: list[pb.Command] = []
        self.completed: list[int] = []

    def kinds(self) -> list[str]:
        return [str(c.WhichOneof("command")) for c in self.sent]


def state(rec: CheckpointRecord) -> CheckpointState:
    return rec.state  # read anew: mypy would narrow ``rec.state`` across calls


def in_flight(cc: CheckpointCoordinator) -> CheckpointRecord | None:
    return cc.in_flight


def _coordinator(
    tmp_path: Path, tasks: int = 3
) -> tuple[CheckpointCoordinator, Containers, ManualClock]:
    clock = ManualClock()
    out = Containers()
    catalogue = Catalogue(tmp_path / "catalogue.json", clock)
    coordinator = CheckpointCoordinator(
        catalogue,
        interval_s=3.0,
        tasks=lambda: tasks,
        broadcast=out.sent.append,
        on_complete=lambda rec: out.completed.append(rec.id),
        timeout_s=60.0,
        clock=clock,
    )
    return coordinator, out, clock


def _ack(task: int, checkpoint: int, epoch: int = 0, declined: str = "") -> pb.CheckpointAck:
    return pb.CheckpointAck(
        topology="t",
        task_id=task,
        checkpoint_id=checkpoint,
        epoch=epoch,
        size_bytes=10,
        declined=declined,
    )


def test_a_checkpoint_is_due_once_the_interval_has_passed(tmp_path: Path) -> None:
    cc, out, clock = _coordinator(tmp_path)
    assert not cc.due()
    clock.advance(3.0)
    assert cc.due()
    rec = cc.trigger(revision=2)
    assert (rec.id, rec.revision, rec.state) == (1, 2, CheckpointState.IN_PROGRESS)
    assert out.kinds() == ["checkpoint"]
    assert (out.sent[0].checkpoint.id, out.sent[0].checkpoint.epoch) == (1, 0)
    clock.advance(10.0)
    assert not cc.due()  # one in flight at a time


def test_it_completes_only_when_every_instance_has_acked(tmp_path: Path) -> None:
    cc, out, clock = _coordinator(tmp_path, tasks=3)
    rec = cc.trigger(revision=1)
    cc.ack(_ack(1, rec.id))
    cc.ack(_ack(2, rec.id))
    cc.ack(_ack(2, rec.id))  # again: counted once
    assert state(rec) in (CheckpointState.IN_PROGRESS,) and in_flight(cc) == rec
    assert out.completed == []
    clock.advance(0.25)
    cc.ack(_ack(3, rec.id))
    assert state(rec) == CheckpointState.COMPLETE
    assert cc.in_flight is None
    assert rec.duration_ms == 250.0 and rec.size_bytes == 40
    # the catalogue on disk holds it, then the commit goes out, then the host hears it
    on_disk = Catalogue(tmp_path / "catalogue.json")
    assert on_disk.latest_complete() == rec.id
    assert out.kinds() == ["checkpoint", "commit"]
    assert (out.sent[1].commit.id, out.sent[1].commit.keep_from) == (rec.id, rec.id)
    assert out.completed == [rec.id]


def test_the_commit_keeps_the_complete_checkpoint_before(tmp_path: Path) -> None:
    cc, out, _ = _coordinator(tmp_path, tasks=1)
    for _ in range(3):
        rec = cc.trigger(revision=1)
        cc.ack(_ack(1, rec.id))
    assert [(c.commit.id, c.commit.keep_from) for c in out.sent if c.HasField("commit")] == [
        (1, 1),
        (2, 1),
        (3, 2),
    ]


def test_a_decline_fails_it_at_once(tmp_path: Path) -> None:
    cc, out, _ = _coordinator(tmp_path, tasks=2)
    rec = cc.trigger(revision=1)
    cc.ack(_ack(1, rec.id))
    cc.ack(_ack(2, rec.id, declined="disk full"))
    assert state(rec) == CheckpointState.FAILED and cc.in_flight is None
    assert Catalogue(tmp_path / "catalogue.json").find(rec.id).state == "FAILED"  # type: ignore[union-attr]
    cc.ack(_ack(2, rec.id))  # late: nothing completes
    assert out.kinds() == ["checkpoint"] and out.completed == []


def test_acks_of_another_checkpoint_or_epoch_are_ignored(tmp_path: Path) -> None:
    cc, out, _ = _coordinator(tmp_path, tasks=1)
    rec = cc.trigger(revision=1)
    cc.ack(_ack(1, rec.id, epoch=7))
    cc.ack(_ack(1, rec.id + 1))
    assert cc.in_flight == rec and out.completed == []


def test_a_timeout_fails_it(tmp_path: Path) -> None:
    cc, out, clock = _coordinator(tmp_path)
    assert not cc.check_timeout()  # nothing in flight
    rec = cc.trigger(revision=1)
    clock.advance(60.0)
    assert cc.check_timeout() and state(rec) in (CheckpointState.IN_PROGRESS,)
    clock.advance(0.1)
    assert cc.check_timeout()  # it was in flight this turn
    assert (state(rec), cc.in_flight) == (CheckpointState.FAILED, None)
    assert not cc.check_timeout()
    cc.ack(_ack(1, rec.id))
    assert out.completed == []


def test_a_restore_abandons_the_checkpoint_in_flight(tmp_path: Path) -> None:
    cc, _, clock = _coordinator(tmp_path)
    rec = cc.trigger(revision=1)
    cc.abandon()
    assert state(rec) == CheckpointState.FAILED and cc.in_flight is None
    clock.advance(5.0)
    cc.restart_interval()  # the restore ended: the interval counts from now
    assert not cc.due()
    clock.advance(3.0)
    assert cc.due()


def test_a_checkpoint_is_complete_only_once_on_disk(tmp_path: Path) -> None:
    cc, out, _ = _coordinator(tmp_path, tasks=1)
    rec = cc.trigger(revision=1)
    cc.catalogue.path = tmp_path / "gone" / "catalogue.json"  # a disk that refuses it
    cc.ack(_ack(1, rec.id))
    assert state(rec) == CheckpointState.FAILED
    assert out.kinds() == ["checkpoint"] and out.completed == []


def test_each_checkpoint_logs_at_debug_and_a_summary_at_most_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    cc, _, clock = _coordinator(tmp_path, tasks=1)
    caplog.set_level(logging.DEBUG, logger="headwater.tmaster")
    for _ in range(100):  # one a second, each taking 10 ms
        rec = cc.trigger(revision=1)
        clock.advance(0.01)
        cc.ack(_ack(1, rec.id))
        clock.advance(0.99)
        cc.check_timeout()  # the topology master's turn
    info = [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO]
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG]
    assert info == [
        "checkpoint 1 complete in 10 ms (10 bytes)",  # the first: checkpoints work
        "checkpoints 2-61 completed in the last 60 s (60; mean 10 ms, slowest 10 ms, "
        "latest 10 bytes)",
    ]
    assert debug[0].getMessage() == "checkpoint 2 complete in 10 ms (10 bytes)"
    assert len(debug) == 99 and {r.name for r in debug} == {"headwater.tmaster.checkpoints"}
    caplog.clear()
    clock.advance(10.0)
    cc.check_timeout()  # 50 s since the summary (at checkpoint 61's end): nothing yet
    assert [r for r in caplog.records if r.levelno >= logging.INFO] == []
    clock.advance(10.4)
    cc.check_timeout()  # a minute: what completed since, without a new checkpoint
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.INFO] == [
        "checkpoints 62-100 completed in the last 60 s (39; mean 10 ms, slowest 10 ms, "
        "latest 10 bytes)"
    ]


def test_the_log_level_can_name_a_logger_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    from headwater.common import _logging

    root, each = logging.getLogger(), logging.getLogger("headwater.tmaster.checkpoints")
    saved = root.handlers[:], root.level, each.level
    monkeypatch.setenv("HEADWATER_LOG_LEVEL", "WARNING,headwater.tmaster.checkpoints=DEBUG")
    try:
        _logging.setup("test")
        assert root.level == logging.WARNING and each.level == logging.DEBUG
        assert each.isEnabledFor(logging.DEBUG)
        assert not logging.getLogger("headwater.tmaster").isEnabledFor(logging.INFO)
        monkeypatch.setenv("HEADWATER_LOG_LEVEL", "INFO,DEBUG")
        with pytest.raises(ValueError, match="LOGGER=LEVEL"):
            _logging.setup("test")
    finally:
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        each.setLevel(saved[2])
