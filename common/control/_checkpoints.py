"""The checkpoint coordinator of one domain: when to checkpoint, and when one is complete.

Exactly-once topologies take Chandy-Lamport barrier snapshots, as Heron and
Flink do: every ``interval_s`` the coordinator orders checkpoint N (a
``TakeCheckpoint`` to every container: the spouts snapshot and send
markers; each instance snapshots once markers from all its inputs have come,
and acknowledges). N is complete when every instance has acknowledged and the
catalogue holding it is on disk; then ``commit N`` goes to every container
(transactional sinks publish). One declined acknowledgement (a snapshot that
could not be stored) fails N at once, as Flink's DeclineCheckpoint does; so
does a checkpoint in flight for longer than ``timeout_s``. At most one is in
flight; a failed one is simply followed by the next.

Logs: one line per checkpoint is DEBUG (``headwater.tmaster.checkpoints``; a topology
checkpoints every second or so). At INFO the first completed checkpoint is logged, then
a summary at most once a minute ("checkpoints 41-100 completed in the last 60 s ...");
a failed checkpoint is a WARNING each time.

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
each_log = logging.getLogger("headwater.tmaster.checkpoints")
CHECKPOINT_TIMEOUT_S = 60.0
SUMMARY_S = 60.0
"""At most one INFO summary of completed checkpoints per this many seconds."""


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
        self._summary = _Summary(clock.monotonic())

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
        self._broadcast(pb.Command(checkpoint=pb.TakeCheckpoint(id=rec.id, epoch=self.epoch)))
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
        self._summarize()
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
        first = self._summary.first == 0 and self._summary.logged == 0
        each_log.log(
            logging.INFO if first else logging.DEBUG,
            "checkpoint %d complete in %.0f ms (%d bytes)",
            rec.id,
            rec.duration_ms,
            rec.size_bytes,
        )
        if first:
            self._summary.logged = rec.id
            self._summary.t0 = self.clock.monotonic()
        else:
            self._summary.add(rec)
            self._summarize()
        self._broadcast(pb.Command(commit=pb.Commit(id=rec.id, keep_from=keep_from)))
        self._on_complete(rec)

    def _summarize(self) -> None:
        """Log what completed since the last summary, once ``SUMMARY_S`` has passed."""
        s, now = self._summary, self.clock.monotonic()
        if s.count and now - s.t0 >= SUMMARY_S:
            log.info(
                "checkpoints %d-%d completed in the last %.0f s (%d; mean %.0f ms, "
                "slowest %.0f ms, latest %d bytes)",
                s.first,
                s.last,
                now - s.t0,
                s.count,
                s.total_ms / s.count,
                s.slowest_ms,
                s.bytes,
            )
            self._summary = _Summary(now, logged=s.last)


class _Summary:
    """The checkpoints completed since the last INFO line about them."""

    def __init__(self, t0: float, logged: int = 0) -> None:
        self.t0 = t0
        self.logged = logged  # the newest id an INFO line named (0: none yet)
        self.first = self.last = self.count = self.bytes = 0
        self.total_ms = self.slowest_ms = 0.0

    def add(self, rec: CheckpointRecord) -> None:
        self.first = self.first or rec.id
        self.last = rec.id
        self.count += 1
        ms = rec.duration_ms or 0.0
        self.total_ms += ms
        self.slowest_ms = max(self.slowest_ms, ms)
        self.bytes = rec.size_bytes
