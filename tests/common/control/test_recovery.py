"""headwater.common.control._recovery: epochs, restores and the rollback throttle."""

from __future__ import annotations

from pathlib import Path

from headwater.common._clock import ManualClock
from headwater.common.control._catalogue import Catalogue
from headwater.common.control._recovery import (
    RESTORE_BURST,
    RESTORE_MAX_DELAY_S,
    RESTORE_WINDOW_S,
    Recovery,
    RestoreAck,
    RollbackThrottle,
)
from headwater.common.wire._states import CheckpointState
from headwater.common.wire.proto import runtime_pb2 as pb


def test_a_burst_of_rollbacks_goes_out_at_once_then_delays_double_up_to_the_cap() -> None:
    clock = ManualClock()
    throttle = RollbackThrottle(clock)
    delays = []
    for _ in range(RESTORE_BURST + 8):
        delays.append(throttle.rollback())
        clock.advance(0.1)
    assert delays[:RESTORE_BURST] == [0.0] * RESTORE_BURST
    assert delays[RESTORE_BURST:] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    assert max(delays) == RESTORE_MAX_DELAY_S


def test_the_throttle_forgets_rollbacks_older_than_its_window() -> None:
    clock = ManualClock()
    throttle = RollbackThrottle(clock)
    for _ in range(RESTORE_BURST):
        assert throttle.rollback() == 0.0
    assert throttle.rollback() == 0.5
    clock.advance(RESTORE_WINDOW_S)  # a whole window without a rollback
    assert [throttle.rollback() for _ in range(RESTORE_BURST)] == [0.0] * RESTORE_BURST
    assert throttle.rollback() == 0.5


class Published:
    def __init__(self) -> None:
        self.count = 0

    def __call__(self) -> None:
        self.count += 1


def _recovery(tmp_path: Path) -> tuple[Recovery, Published, ManualClock, Catalogue]:
    clock = ManualClock()
    catalogue = Catalogue(tmp_path / "catalogue.json", clock)
    published = Published()
    return Recovery(catalogue, publish=published, clock=clock), published, clock, catalogue


def _complete(catalogue: Catalogue) -> int:
    rec = catalogue.start(catalogue.epoch)
    rec.state = CheckpointState.COMPLETE
    catalogue.save()
    return rec.id


def test_each_rollback_opens_an_epoch_and_restores_the_last_complete_checkpoint(
    tmp_path: Path,
) -> None:
    recovery, published, _, catalogue = _recovery(tmp_path)
    first = _complete(catalogue)
    second = _complete(catalogue)
    catalogue.start(catalogue.epoch)  # in flight: never a restore target
    assert recovery.open_epoch() == second and recovery.epoch == 1
    assert Catalogue(tmp_path / "catalogue.json").epoch == 1  # on disk first
    assert recovery.open_epoch(below=second) == first and recovery.epoch == 2
    recovery.begin(first, revision=1)
    assert recovery.restoring == pb.Restore(checkpoint_id=first, epoch=2, revision=1)
    assert (published.count, recovery.recoveries) == (1, 1)


def test_the_restore_ends_when_every_container_has_acked(tmp_path: Path) -> None:
    recovery, _, _, _ = _recovery(tmp_path)
    recovery.open_epoch()
    recovery.begin(0, revision=1, throttled=False)  # a starting topology master's
    assert recovery.recoveries == 0

    def ack(container: int, epoch: int = 1) -> RestoreAck:
        return recovery.ack(pb.RestoreAck(container=container, epoch=epoch, ok=True), 2)

    assert ack(0, epoch=0) is RestoreAck.IGNORED  # an older epoch's
    assert ack(0) is RestoreAck.WAITING
    assert ack(0) is RestoreAck.WAITING  # again: counted once
    assert ack(1) is RestoreAck.DONE and recovery.restoring is None
    assert ack(1) is RestoreAck.IGNORED


def test_a_corrupt_snapshot_marks_its_checkpoint_and_asks_for_the_one_before(
    tmp_path: Path,
) -> None:
    recovery, _, _, catalogue = _recovery(tmp_path)
    _complete(catalogue)
    latest = _complete(catalogue)
    recovery.begin(recovery.open_epoch(), revision=1)
    bad = pb.RestoreAck(container=0, epoch=1, checkpoint_id=latest, ok=False, error="checksum")
    assert recovery.ack(bad, 1) is RestoreAck.UNUSABLE
    assert catalogue.find(latest).state == CheckpointState.CORRUPT  # type: ignore[union-attr]
    assert recovery.open_epoch(below=latest) == latest - 1


def test_a_held_rollback_goes_out_once_its_delay_has_passed(tmp_path: Path) -> None:
    recovery, published, clock, _ = _recovery(tmp_path)
    for _ in range(RESTORE_BURST):
        recovery.begin(recovery.open_epoch(), revision=1)
    assert published.count == RESTORE_BURST and not recovery.held()
    recovery.begin(recovery.open_epoch(), revision=1)
    assert published.count == RESTORE_BURST and recovery.held()
    clock.advance(0.4)
    recovery.release_due()
    assert published.count == RESTORE_BURST
    clock.advance(0.1)
    recovery.release_due()
    assert published.count == RESTORE_BURST + 1 and not recovery.held()
    recovery.release_due()
    assert published.count == RESTORE_BURST + 1  # once
