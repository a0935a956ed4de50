"""Recovery of one domain: epochs, the restore in progress, and the rollback throttle.

Any failure in an exactly-once domain (a lost instance, a restarted container,
a restarted topology master) opens a new *epoch*: every container restores
its instances from the last complete checkpoint and acknowledges; only when
all have does the topology run again (the topology master orchestrates it;
this module keeps the state). A container that finds a snapshot failing its
checksum says so; its checkpoint is marked ``CORRUPT`` and the restore falls
back to the complete checkpoint before it.

A failure that comes back at once (code that cannot start) must not spin:
``RollbackThrottle`` lets ``RESTORE_BURST`` rollbacks within ``RESTORE_WINDOW_S``
go out at once, then holds each further one twice as long as the one before,
up to ``RESTORE_MAX_DELAY_S``. Runs on the topology master's event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum

from .._clock import SYSTEM_CLOCK, Clock
from ..wire._states import CheckpointState
from ..wire.proto import runtime_pb2 as pb
from ._catalogue import Catalogue

log = logging.getLogger("headwater.tmaster")
RESTORE_BURST = 3  # rollbacks in a row that go out at once
RESTORE_WINDOW_S = 30.0
RESTORE_FIRST_DELAY_S = 0.5
RESTORE_MAX_DELAY_S = 30.0


@dataclass
class RollbackThrottle:
    """How long each rollback waits: nothing for a burst, then doubling delays.

    The delay follows the number of rollbacks in the sliding window, not a
    count of retries in a row, so it is computed here rather than by a
    ``Backoff`` (which only grows and resets).
    """

    clock: Clock = SYSTEM_CLOCK
    burst: int = RESTORE_BURST
    window_s: float = RESTORE_WINDOW_S
    first_delay_s: float = RESTORE_FIRST_DELAY_S
    max_delay_s: float = RESTORE_MAX_DELAY_S

    def __post_init__(self) -> None:
        self._begun: list[float] = []  # when the recent rollbacks began

    def rollback(self) -> float:
        """Count a rollback beginning now; how long it must wait before going out."""
        now = self.clock.monotonic()
        recent = [t for t in self._begun if now - t < self.window_s]
        self._begun = [*recent, now]
        if len(recent) < self.burst:
            return 0.0
        delay = min(self.first_delay_s * 2.0 ** (len(recent) - self.burst), self.max_delay_s)
        log.warning(
            "%d rollbacks in %.0fs: restoring in %.1fs; the cause is under /exceptions",
            len(recent) + 1,
            self.window_s,
            delay,
        )
        return delay


class RestoreAck(Enum):
    """What one container's restore acknowledgement means for the restore."""

    IGNORED = "ignored"  # late (an older epoch) or none in progress
    WAITING = "waiting"  # more containers to go
    DONE = "done"  # every container restored: the topology may run
    UNUSABLE = "unusable"  # the checkpoint is corrupt: restore the one before


class Recovery:
    """The epoch, the restore in progress and who has acknowledged it.

    ``publish`` sends the plan (and with it the restore) to every container;
    a held rollback is published by ``release_due`` once its delay has passed.
    """

    def __init__(
        self,
        catalogue: Catalogue,
        *,
        publish: Callable[[], None],
        clock: Clock = SYSTEM_CLOCK,
        throttle: RollbackThrottle | None = None,
    ) -> None:
        self.catalogue = catalogue
        self._publish = publish
        self.clock = clock
        self.throttle = throttle if throttle is not None else RollbackThrottle(clock)
        self.restoring: pb.Restore | None = None
        self.restored: set[int] = set()  # the containers that have acknowledged it
        self.recoveries = 0  # rollbacks since this topology master started
        self.held_until = 0.0  # a held rollback goes out then (0: none held)

    @property
    def epoch(self) -> int:
        return self.catalogue.epoch

    def open_epoch(self, below: int | None = None) -> int:
        """Start a new epoch; the checkpoint to restore (the newest complete one below
        ``below``; 0 for none)."""
        self.catalogue.epoch += 1
        target = self.catalogue.latest_complete(below=below)
        self.catalogue.save()
        return target

    def begin(self, checkpoint_id: int, revision: int, *, throttled: bool = True) -> None:
        """Restore ``checkpoint_id`` (taken by ``revision``) in the current epoch.

        It goes out at once, or once the throttle lets it (``throttled=False``: the
        first restore of a starting topology master, sent when containers watch)."""
        self.restoring = pb.Restore(
            checkpoint_id=checkpoint_id, epoch=self.epoch, revision=revision
        )
        self.restored = set()
        if not throttled:
            return
        self.recoveries += 1
        delay = self.throttle.rollback()
        if delay:
            self.held_until = self.clock.monotonic() + delay
        else:
            self.held_until = 0.0
            self._publish()

    def held(self) -> bool:
        """True while a rollback waits for its delay."""
        return self.held_until > self.clock.monotonic()

    def release_due(self) -> None:
        """Publish a held rollback whose delay has passed."""
        if self.held_until and self.clock.monotonic() >= self.held_until:
            self.held_until = 0.0
            if self.restoring is not None:
                self._publish()

    def ack(self, request: pb.RestoreAck, containers: int) -> RestoreAck:
        """A container restored the checkpoint (or could not); ``containers`` in the plan."""
        r = self.restoring
        if r is None or request.epoch != r.epoch:
            return RestoreAck.IGNORED
        if not request.ok:
            log.warning(
                "container %d cannot restore checkpoint %d: %s; falling back to the "
                "previous checkpoint",
                request.container,
                request.checkpoint_id,
                request.error,
            )
            rec = self.catalogue.find(request.checkpoint_id)
            if rec is not None:
                rec.state = CheckpointState.CORRUPT
            return RestoreAck.UNUSABLE
        self.restored.add(request.container)
        if len(self.restored) < containers:
            return RestoreAck.WAITING
        log.info(
            "epoch %d: every container restored checkpoint %d; resuming", r.epoch, r.checkpoint_id
        )
        self.restoring = None
        return RestoreAck.DONE
