"""The live-edit state machine of one domain: a revision from proposed to applied.

An edit (exactly-once topologies only) moves through ``EditPhase``:

- ``WAITING``: proposed; it waits until no checkpoint is in flight and no
  restore is in progress (a paused topology switches too: paused spouts
  still snapshot and send markers);
- ``PREPARING``: the revision went to every container, which loads its code
  and says so (``AckSwitch``); no checkpoint starts meanwhile. A container
  that cannot load it, or ``PREPARE_TIMEOUT_S`` without every answer, aborts
  the edit: ``Switch(commit=False)`` and the revision is ``refused``;
- ``SWITCHING``: every container is ready; the next checkpoint, the *switch
  checkpoint*, is taken by the previous revision;
- ``ACTIVATING``: the switch checkpoint is complete; the topology master runs
  the new plan and the containers swap their instances (tasks whose
  parallelism changes hand their state over, ``PutState``). The edit is
  ``applied`` when the first checkpoint taken by the new revision completes.

A failure before that rolls back like any other, to the switch checkpoint,
so the previous revision runs again (``roll_back``). The coordinator reaches
its topology master only through ``EditPorts``; runs on its event loop only.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Protocol

from .._clock import SYSTEM_CLOCK, Clock
from ..wire._states import RevisionStatus
from ..wire.proto import runtime_pb2 as pb
from ._catalogue import CheckpointRecord
from ._revisions import EditError, StaleRevisionError

log = logging.getLogger("headwater.tmaster")
PREPARE_TIMEOUT_S = 30.0


class EditPhase(StrEnum):
    WAITING = "waiting"
    PREPARING = "preparing"
    SWITCHING = "switching"
    ACTIVATING = "activating"


@dataclass
class Edit:
    """The edit being applied (one at a time)."""

    revision: int
    replaced: tuple[str, ...]
    phase: EditPhase = EditPhase.WAITING
    at: int = 0  # the switch checkpoint
    acks: frozenset[int] = frozenset()  # containers ready (preparing) or swapped (activating)
    deadline: float = 0.0  # monotonic: preparing ends by then
    # components whose parallelism changes -> their old task ids; the old tasks'
    # snapshots of the switch checkpoint, collected for the new tasks
    rescaled: dict[str, list[int]] = field(default_factory=dict)
    parts: dict[str, dict[int, pb.StateTransfer]] = field(default_factory=dict)


class EditPorts(Protocol):
    """What the edit coordinator asks of its topology master."""

    def broadcast(self, command: pb.Command) -> None:
        """Queue ``command`` for every container."""

    def revision_message(
        self, revision: int, switch_at: int, replaced: tuple[str, ...]
    ) -> pb.Revision:
        """The ``Revision`` command that makes containers load ``revision``."""
        ...

    def trigger_checkpoint(self) -> CheckpointRecord:
        """Start the next checkpoint now."""
        ...

    def take_over(self, revision: int, switch_at: int) -> None:
        """Run ``revision``'s plan from now on (from checkpoint ``switch_at``) and publish it."""

    def finish(self, revision: int, status: RevisionStatus, error: str = "") -> None:
        """Record the edit's outcome in the revision history."""


class EditCoordinator:
    """Drives one edit at a time through its phases (``edit`` is None when none is)."""

    def __init__(
        self,
        ports: EditPorts,
        *,
        prepare_timeout_s: float = PREPARE_TIMEOUT_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.ports = ports
        self.prepare_timeout_s = prepare_timeout_s
        self.clock = clock
        self.edit: Edit | None = None

    def check_start(self, base: int, current: int, *, exactly_once: bool) -> None:
        """Raise EditError unless an edit made against revision ``base`` can start now
        (``current`` runs)."""
        if base != current:
            raise StaleRevisionError(base, current)
        if not exactly_once:
            raise EditError(
                "live edits switch at a checkpoint barrier, so they need an exactly-once "
                "topology (topology.reliability.mode: EFFECTIVELY_ONCE)"
            )
        if self.edit is not None:
            raise EditError(
                f"revision {self.edit.revision} is still being applied; wait for it "
                "(`headwater revisions`) and edit again"
            )

    def start(
        self, revision: int, replaced: tuple[str, ...], rescaled: dict[str, list[int]]
    ) -> Edit:
        assert self.edit is None, self.edit
        self.edit = Edit(revision, replaced, rescaled=rescaled)
        return self.edit

    def step(self, *, ready: bool, next_checkpoint: int, containers: int) -> None:
        """Move a waiting edit on, or time a preparing one out (called every tick).

        ``ready``: no checkpoint in flight, no restore, every container registered;
        ``next_checkpoint``: the id the next checkpoint will have (the switch)."""
        e = self.edit
        if e is None:
            return
        if e.phase is EditPhase.WAITING and ready:
            e.phase, e.acks = EditPhase.PREPARING, frozenset()
            e.deadline = self.clock.monotonic() + self.prepare_timeout_s
            e.at = next_checkpoint
            msg = self.ports.revision_message(e.revision, e.at, e.replaced)
            self.ports.broadcast(pb.Command(revision=msg))
        elif e.phase is EditPhase.PREPARING and self.clock.monotonic() > e.deadline:
            missing = sorted(set(range(containers)) - e.acks)
            self.abort(
                f"containers {missing} did not load the revision in {self.prepare_timeout_s:.0f}s"
            )

    def switch_ack(self, request: pb.SwitchAck, *, containers: int, idle: bool) -> None:
        """A container loaded the revision (preparing) or swapped to it (activating).

        ``idle``: no checkpoint in flight, so the switch checkpoint can start."""
        e = self.edit
        if e is None or request.revision != e.revision:
            return
        if e.phase is EditPhase.ACTIVATING:  # its new instances are up
            e.acks = e.acks | {request.container}
            return
        if e.phase is not EditPhase.PREPARING:
            return
        if not request.ok:
            self.abort(request.error)
            return
        e.acks = e.acks | {request.container}
        if len(e.acks) == containers and idle:
            e.phase = EditPhase.SWITCHING
            rec = self.ports.trigger_checkpoint()
            assert rec.id == e.at, (rec.id, e.at)  # nothing else starts checkpoints meanwhile
            log.info(
                "revision %d: every container is ready; switching at checkpoint %d",
                e.revision,
                e.at,
            )

    def put_state(self, request: pb.StateTransfer) -> None:
        """An old task's snapshot for the new tasks of a rescaled component."""
        e = self.edit
        if e is None or e.phase is not EditPhase.ACTIVATING or request.revision != e.revision:
            return
        old = e.rescaled.get(request.component)
        if old is None or request.task_id not in old:
            return
        parts = e.parts.setdefault(request.component, {})
        parts[request.task_id] = request
        if len(parts) == len(old):
            log.info(
                "revision %d: %s's state from %d tasks goes to its new ones",
                e.revision,
                request.component,
                len(old),
            )
            self.ports.broadcast(
                pb.Command(
                    handover=pb.StateHandover(
                        revision=e.revision,
                        component=request.component,
                        parts=[parts[t] for t in sorted(parts)],
                    )
                )
            )

    def hand_in(self, revision: int, component: str, parts: list[bytes]) -> bool:
        """A keyed move's state from the cloud (an agent's edit, issue 37): its new tasks of
        ``component`` each keep their keys, as a rescale's do; False unless the edit to
        ``revision`` is activating (its tasks wait for them only then)."""
        e = self.edit
        if e is None or e.phase is not EditPhase.ACTIVATING or e.revision != revision:
            return False
        transfers = [pb.StateTransfer(component=component, blob=blob) for blob in parts]
        handover = pb.StateHandover(revision=revision, component=component, parts=transfers)
        self.ports.broadcast(pb.Command(handover=handover))
        log.info("revision %d: %s's keys from the cloud go to its tasks", revision, component)
        return True

    def checkpoint_complete(self, rec: CheckpointRecord) -> None:
        """The switch checkpoint activates the revision; its first own one applies it."""
        e = self.edit
        if e is None:
            return
        if e.phase is EditPhase.SWITCHING and rec.id == e.at:
            e.phase, e.acks = EditPhase.ACTIVATING, frozenset()
            self.ports.take_over(e.revision, rec.id)
            log.info("checkpoint %d complete: revision %d takes over", rec.id, e.revision)
        elif e.phase is EditPhase.ACTIVATING and rec.revision == e.revision:
            self.edit = None
            self.ports.finish(e.revision, RevisionStatus.APPLIED)

    def holds_checkpoints(self, containers: int) -> bool:
        """No checkpoint while an edit prepares or switches, nor before its instances are up."""
        e = self.edit
        if e is None or e.phase is EditPhase.WAITING:
            return False
        return e.phase is not EditPhase.ACTIVATING or len(e.acks) < containers

    def abort(self, error: str) -> None:
        """Give the edit up before its switch: containers drop the loaded revision."""
        e = self.edit
        assert e is not None
        self.edit = None
        self.ports.broadcast(pb.Command(switch=pb.Switch(revision=e.revision, commit=False)))
        self.ports.finish(e.revision, RevisionStatus.REFUSED, error)

    def roll_back(self, reason: str) -> None:
        """A restore begins: the edit (if any) is over and the previous revision runs."""
        e = self.edit
        if e is None:
            return
        self.edit = None
        if e.phase is EditPhase.PREPARING:
            self.ports.broadcast(pb.Command(switch=pb.Switch(revision=e.revision, commit=False)))
        self.ports.finish(
            e.revision,
            RevisionStatus.ROLLED_BACK,
            f"{reason}; revision {e.revision} was rolled back and the previous one runs",
        )
