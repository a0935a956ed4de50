"""The checkpoint coordinator of one domain: when to checkpoint, and when one is complete.

Exactly-once topologies take Chandy-Lamport barrier snapshots, as Heron and
Flink do: every ``interval_s`` the coordinator orders checkpoint N (a
``CheckpointRequest`` to every container: the spouts snapshot and send
markers; each instance snapshots once markers from all its inputs have come,
and acknowledges). N is complete when every instance has acknowledged and the
catalogue holding it is on disk; then ``commit N`` goes to every container
(transactional sinks publish). One declined acknowledgement (a snapshot that
could not be stored) fails N at once, as Flink's DeclineCheckpoint does; so
does a checkpoint in flight for longer than ``timeout_s``. At most one is in
flight; a failed one is simply followed by the next.

The coordinator sends through ``broadcast`` and reads time from its clock, so
it runs without gRPC or processes (see tests/common/control/test_checkpoints.py).
Runs on the topology master's event loop only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from .._clock import SYSTEM_CLOCK, Clock
from ..wire._states import CheckpointState
from ..wire.proto import runtime_pb2 as pb
from ._catalogue import Catalogue, CheckpointRecord

log = logging.getLogger("headwater.tmaster")
CHECKPOINT_TIMEOUT_S = 60.0


class CheckpointCoordinator:
    """Starts checkpoints, counts their acknowledgements, completes or fails them.

    ``tasks()`` is how many instances must acknowledge (the plan running now);
    ``broadcast`` queues a command for every container; ``on_complete`` hears
    each checkpoint completed (after its commit went out).
    """

    def __init__(
        self,
        catalogue: Catalogue,
        *,
        interval_s: float,
        tasks: Callable[[], int],
        broadcast: Callable[[pb.Command], None],
        on_complete: Callable[[CheckpointRecord], None] = lambda rec: None,
        timeout_s: float = CHECKPOINT_TIMEOUT_S,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.catalogue = catalogue
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._tasks = tasks
        self._broadcast = broadcast
        self._on_complete = on_complete
        self.clock = clock
        self.in_flight: CheckpointRecord | None = None
        self._last = clock.monotonic()  # when the last one started (or a restore ended)

    @property
    def epoch(self) -> int:
        return self.catalogue.epoch

    def due(self) -> bool:
        """True when none is in flight and the interval since the last one has passed."""
        return self.in_flight is None and self.clock.monotonic() - self._last >= self.interval_s

    def trigger(self, revision: int) -> CheckpointRecord:
        """Start the next checkpoint, taken by ``revision``'s code."""
        self._last = self.clock.monotonic()
        rec = self.in_flight = self.catalogue.start(self.epoch, revision)
        self._broadcast(pb.Command(checkpoint=pb.CheckpointRequest(id=rec.id, epoch=self.epoch)))
        return rec

    def ack(self, request: pb.CheckpointAck) -> None:
        """An instance stored (or declined) its snapshot of the checkpoint in flight."""
        rec = self.in_flight
        if rec is None or request.checkpoint_id != rec.id or request.epoch != self.epoch:
            return  # late: from a rolled-back epoch or an abandoned checkpoint
        if request.declined:  # as Flink's DeclineCheckpoint: fail it now, the next may do
            log.warning(
                "checkpoint %d failed: task %d could not store its snapshot: %s",
                rec.id,
                request.task_id,
                request.declined,
            )
            self._fail(rec)
            return
        rec.acked.add(request.task_id)
        rec.size_bytes += request.size_bytes
        if len(rec.acked) == self._tasks():
            self._complete(rec)

    def check_timeout(self) -> bool:
        """Fail the checkpoint in flight if it took too long; True if one is (still) in flight."""
        rec = self.in_flight
        if rec is None:
            return False
        if self.clock.monotonic() - rec._t0 > self.timeout_s:
            log.warning("checkpoint %d timed out", rec.id)
            self._fail(rec)
        return True

    def abandon(self) -> None:
        """A restore begins: the checkpoint in flight can never complete."""
        if self.in_flight is not None:
            self.in_flight.state = CheckpointState.FAILED
            self.in_flight = None

    def restart_interval(self) -> None:
        """Count the interval from now (a restore has just ended)."""
        self._last = self.clock.monotonic()

    def _fail(self, rec: CheckpointRecord) -> None:
        rec.state = CheckpointState.FAILED
        self.in_flight = None
        self.catalogue.save()

    def _complete(self, rec: CheckpointRecord) -> None:
        rec.state = CheckpointState.COMPLETE
        rec.duration_ms = (self.clock.monotonic() - rec._t0) * 1000.0
        self.in_flight = None
        if not self.catalogue.save():  # complete only once on disk (a full disk: not)
            rec.state = CheckpointState.FAILED
            return
        complete = self.catalogue.complete()
        keep_from = complete[-2].id if len(complete) >= 2 else rec.id
        log.info(
            "checkpoint %d complete in %.0f ms (%d bytes)", rec.id, rec.duration_ms, rec.size_bytes
        )
        self._broadcast(pb.Command(commit=pb.CheckpointCommit(id=rec.id, keep_from=keep_from)))
        self._on_complete(rec)
