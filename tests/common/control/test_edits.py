"""headwater.common.control._edits: a live edit's phases, its prepare timeout and rollback."""

from __future__ import annotations

import pytest

from headwater.common._clock import ManualClock
from headwater.common.control._catalogue import CheckpointRecord
from headwater.common.control._edits import PREPARE_TIMEOUT_S, EditCoordinator, EditPhase
from headwater.common.wire._states import RevisionStatus
from headwater.common.wire.proto import runtime_pb2 as pb

CONTAINERS = 2


class Master:
    """The ports an edit coordinator uses, recording what it asked."""

    def __init__(self) -> None:
        self.sent: list[pb.Command] = []
        self.next_checkpoint = 5
        self.triggered: list[int] = []
        self.running = 1
        self.outcomes: list[tuple[int, RevisionStatus, str]] = []

    def broadcast(self, command: pb.Command) -> None:
        self.sent.append(command)

    def revision_message(
        self, revision: int, switch_at: int, replaced: tuple[str, ...]
    ) -> pb.Revision:
        return pb.Revision(revision=revision, switch_at=switch_at, replaced=list(replaced))

    def trigger_checkpoint(self) -> CheckpointRecord:
        rec = CheckpointRecord(self.next_checkpoint, 1, 0.0, revision=self.running)
        self.triggered.append(rec.id)
        self.next_checkpoint += 1
        return rec

    def take_over(self, revision: int, switch_at: int) -> None:
        self.running = revision

    def finish(self, revision: int, status: RevisionStatus, error: str = "") -> None:
        self.outcomes.append((revision, status, error))


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture
def master() -> Master:
    return Master()


@pytest.fixture
def edits(master: Master, clock: ManualClock) -> EditCoordinator:
    coordinator = EditCoordinator(master, clock=clock)
    coordinator.start(2, ("count",), rescaled={})
    return coordinator


def phase(edits: EditCoordinator) -> EditPhase | None:
    return edits.edit.phase if edits.edit is not None else None  # None: no edit


def _step(edits: EditCoordinator, master: Master, ready: bool = True) -> None:
    edits.step(ready=ready, next_checkpoint=master.next_checkpoint, containers=CONTAINERS)


def _switch_ack(edits: EditCoordinator, container: int, ok: bool = True, error: str = "") -> None:
    ack = pb.SwitchAck(container=container, revision=2, ok=ok, error=error)
    edits.switch_ack(ack, containers=CONTAINERS, idle=True)


def _complete(edits: EditCoordinator, checkpoint: int, revision: int) -> None:
    edits.checkpoint_complete(CheckpointRecord(checkpoint, 1, 0.0, revision=revision))


def test_an_edit_goes_through_every_phase_to_applied(
    edits: EditCoordinator, master: Master
) -> None:
    assert phase(edits) == EditPhase.WAITING
    assert not edits.holds_checkpoints(CONTAINERS)
    _step(edits, master, ready=False)  # a checkpoint in flight, say: it waits
    assert phase(edits) == EditPhase.WAITING and master.sent == []

    _step(edits, master)  # preparing: the revision goes out with its switch checkpoint
    assert phase(edits) == EditPhase.PREPARING
    (cmd,) = master.sent
    assert (cmd.revision.revision, cmd.revision.switch_at, list(cmd.revision.replaced)) == (
        2,
        5,
        ["count"],
    )
    assert edits.holds_checkpoints(CONTAINERS)

    _switch_ack(edits, 0)
    assert phase(edits) == EditPhase.PREPARING and master.triggered == []
    _switch_ack(edits, 1)  # switching: every container is ready; the switch checkpoint starts
    assert phase(edits) == EditPhase.SWITCHING and master.triggered == [5]
    assert edits.holds_checkpoints(CONTAINERS)

    _complete(edits, 5, revision=1)  # activating: the new revision takes over
    assert phase(edits) == EditPhase.ACTIVATING and master.running == 2
    assert edits.holds_checkpoints(CONTAINERS)  # until its instances are up
    _switch_ack(edits, 0)
    _switch_ack(edits, 1)
    assert not edits.holds_checkpoints(CONTAINERS)

    _complete(edits, 6, revision=2)  # its first own checkpoint: applied
    assert phase(edits) is None
    assert master.outcomes == [(2, RevisionStatus.APPLIED, "")]


def test_a_container_that_cannot_load_it_aborts_the_edit(
    edits: EditCoordinator, master: Master
) -> None:
    _step(edits, master)
    _switch_ack(edits, 0)
    _switch_ack(edits, 1, ok=False, error="ImportError: no module named 'model'")
    assert phase(edits) is None and master.triggered == []
    assert master.sent[-1].switch == pb.Switch(revision=2, commit=False)
    assert master.outcomes == [(2, RevisionStatus.REFUSED, "ImportError: no module named 'model'")]


def test_a_prepare_that_times_out_aborts_the_edit(
    edits: EditCoordinator, master: Master, clock: ManualClock
) -> None:
    _step(edits, master)
    _switch_ack(edits, 1)
    clock.advance(PREPARE_TIMEOUT_S)
    _step(edits, master)
    assert phase(edits) == EditPhase.PREPARING
    clock.advance(0.1)
    _step(edits, master)
    assert phase(edits) is None
    assert master.sent[-1].switch == pb.Switch(revision=2, commit=False)
    assert master.outcomes == [
        (2, RevisionStatus.REFUSED, "containers [0] did not load the revision in 30s")
    ]


def test_a_failure_before_activation_rolls_the_edit_back(
    edits: EditCoordinator, master: Master
) -> None:
    _step(edits, master)
    _switch_ack(edits, 0)
    _switch_ack(edits, 1)
    _complete(edits, 5, revision=1)
    assert master.running == 2
    edits.roll_back("container 1 restarted")  # the new code fails: a restore begins
    assert phase(edits) is None
    assert not any(c.HasField("switch") for c in master.sent)  # nothing was loading
    assert master.outcomes == [
        (
            2,
            RevisionStatus.ROLLED_BACK,
            "container 1 restarted; revision 2 was rolled back and the previous one runs",
        ),
    ]


def test_a_rollback_while_preparing_tells_containers_to_drop_the_revision(
    edits: EditCoordinator, master: Master
) -> None:
    _step(edits, master)
    edits.roll_back("task 3 exited with 1")
    assert master.sent[-1].switch == pb.Switch(revision=2, commit=False)
    assert master.outcomes[0][:2] == (2, RevisionStatus.ROLLED_BACK)


def test_rescaled_state_is_handed_over_once_every_old_task_sent_its_part(
    master: Master, clock: ManualClock
) -> None:
    edits = EditCoordinator(master, clock=clock)
    edits.start(2, ("count",), rescaled={"count": [3, 4]})
    _step(edits, master)
    _switch_ack(edits, 0)
    _switch_ack(edits, 1)
    part = pb.StateTransfer(revision=2, component="count", task_id=4, blob=b"b")
    edits.put_state(part)  # not activating yet: ignored
    _complete(edits, 5, revision=1)
    edits.put_state(part)
    edits.put_state(pb.StateTransfer(revision=2, component="count", task_id=9))  # not an old one
    assert not any(c.HasField("handover") for c in master.sent)
    edits.put_state(pb.StateTransfer(revision=2, component="count", task_id=3, blob=b"a"))
    handover = master.sent[-1].handover
    assert (handover.component, [p.task_id for p in handover.parts]) == ("count", [3, 4])


def test_a_keyed_moves_state_goes_in_only_while_its_switch_activates(
    edits: EditCoordinator, master: Master
) -> None:
    """An agent's new tasks of a component moved from the cloud wait for their keys while
    the edit activates; the master's hand-over goes to them then, and only then."""
    assert not edits.hand_in(2, "count", [b"a"])  # waiting: its tasks are not up yet
    _step(edits, master)
    _switch_ack(edits, 0)
    _switch_ack(edits, 1)
    assert not edits.hand_in(2, "count", [b"a"])  # switching
    edits.checkpoint_complete(CheckpointRecord(5, 1, 0.0, revision=1))
    assert phase(edits) is EditPhase.ACTIVATING
    assert not edits.hand_in(3, "count", [b"a"])  # another revision's
    master.sent.clear()
    assert edits.hand_in(2, "count", [b"a", b"b"])
    (command,) = master.sent
    assert command.handover.revision == 2 and command.handover.component == "count"
    assert [p.blob for p in command.handover.parts] == [b"a", b"b"]
