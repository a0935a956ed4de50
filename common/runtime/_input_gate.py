"""An instance's input gate: checkpoint barriers between the gateway and the executor.

Every frame from the stmgr passes the gate (``handle``). A bolt aligns on
markers (Chandy-Lamport with alignment, as Flink's
``SingleCheckpointBarrierHandler``): once a marker for checkpoint N came from
an input task, that input's frames are held back until markers came from
every input; then the gate has the instance snapshot its state
(``GatePort.snapshot``, which flushes what it emitted before), sends a marker
to every downstream task and the snapshot to the stmgr, and replays what it
held in the order it arrived. A spout snapshots when its stmgr says
``TakeCheckpoint`` (``take_snapshot``).

The gate also waits for the first restore (``await_restore``) and holds the
revision a live edit stages (``stage``, ``retire_at``): it takes effect at its
switch checkpoint, right after the snapshot. An untouched instance routes
with the new plan from then on; a retiring one stops emitting and is done
once that checkpoint commits (``done``). Runs on the executor thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Generic, Protocol, TypeVar

from ..wire import Kind, marker_frame, parse_frame, state_frame
from ..wire._control import ControlError, Restore, decode_control
from ..wire._frame import Frame

log = logging.getLogger("headwater.instance")


class Revision(Protocol):
    """A staged revision as the gate sees it: whose markers to align, whom to send them."""

    @property
    def sources(self) -> frozenset[int]: ...

    @property
    def downstream(self) -> list[int]: ...


R = TypeVar("R", bound=Revision)
R_contra = TypeVar("R_contra", bound=Revision, contravariant=True)


class GatePort(Protocol[R_contra]):
    """What the gate needs of its instance."""

    def process(self, frame: Frame) -> None:
        """A frame past the gate (data, acks, control): to the executor."""

    def snapshot(self, checkpoint: int) -> bytes:
        """Run the checkpoint hooks, flush what was emitted, return the state's snapshot."""

    def send(self, frame: bytes) -> None:
        """A frame to the stmgr (after everything sent before)."""

    def restore(self, checkpoint: int, blob: bytes | None) -> None:
        """Load the snapshot the stmgr handed over (``None``: start empty)."""

    def switch_to(self, revision: R_contra) -> None:
        """Route with ``revision`` from now on."""

    def retire(self) -> None:
        """Emit no more: flush what is buffered."""


class InputGate(Generic[R]):
    """One instance's checkpoint barriers and staged revision.

    ``seen`` (the inputs whose marker for the current barrier arrived) is
    mutated in place only: a caller may hold a reference to it.
    """

    def __init__(
        self, port: GatePort[R], task: int, sources: frozenset[int], downstream: list[int]
    ) -> None:
        self.port = port
        self.task = task
        self.sources = sources  # the upstream tasks whose markers a checkpoint waits for
        self.downstream = downstream  # the tasks that get this task's markers
        self.barrier = 0
        self.seen: set[int] = set()
        self.held: list[bytes] = []  # frames from inputs past the barrier, in arrival order
        self.checkpoints = 0
        # a staged revision: (switch checkpoint, revision), or retire at one
        self.next: tuple[int, R] | None = None
        self.retire_at_checkpoint = 0
        self.retired = False  # a live edit retired it: it emits no more

    def await_restore(self, frames: Iterable[bytes]) -> list[bytes]:
        """Take ``frames`` until the stmgr's ``Restore``; restore it and return what came
        before (to handle next, in order). ``frames`` ending first means the instance
        stops: ``SystemExit(0)``."""
        early: list[bytes] = []
        for raw in frames:
            f = parse_frame(raw)
            msg = None
            if f.kind == Kind.CONTROL:
                try:
                    msg = decode_control(f.payload)
                except ControlError as exc:
                    log.warning("task %d: dropping a malformed control frame: %s", self.task, exc)
                    continue
            if not isinstance(msg, Restore):
                early.append(raw)
                continue
            self.port.restore(msg.checkpoint, msg.blob)
            log.info("task %d restored from checkpoint %d", self.task, msg.checkpoint)
            return early
        raise SystemExit(0)

    def handle(self, raw: bytes) -> None:
        """One frame from the stmgr: held back, a marker, or on to the executor."""
        f = parse_frame(raw)
        seen = self.seen
        if seen and f.src in seen and f.kind != Kind.CONTROL:
            self.held.append(raw)  # this input is past the barrier: hold it back
        elif f.kind == Kind.MARKER:
            self.on_marker(f.src, f.checkpoint)
        else:
            self.port.process(f)

    def on_marker(self, src: int, checkpoint: int) -> None:
        if checkpoint < self.barrier:
            return  # from a checkpoint already taken: cannot happen in one epoch
        if checkpoint > self.barrier:
            self.barrier = checkpoint
            self.seen.clear()
        self.seen.add(src)
        if self.seen >= self.sources:
            self.take_snapshot(checkpoint)
            self.seen.clear()
            held, self.held = self.held, []
            for raw in held:  # in arrival order; one may hold back again (the next barrier)
                self.handle(raw)

    def take_snapshot(self, checkpoint: int) -> None:
        """Snapshot, then a marker to every downstream task and the snapshot to the stmgr;
        a staged revision switches (or the instance retires) right after."""
        port = self.port
        blob = port.snapshot(checkpoint)
        for task in self.downstream:
            port.send(marker_frame(task, self.task, checkpoint))
        port.send(state_frame(self.task, checkpoint, blob))
        self.checkpoints += 1
        if self.next is not None and self.next[0] == checkpoint:
            revision = self.next[1]
            self.next = None
            port.switch_to(revision)
            self.downstream = revision.downstream
            # an upstream component may have new tasks (another parallelism)
            self.sources = revision.sources
            log.info(
                "task %d routes with the new revision from checkpoint %d", self.task, checkpoint
            )
        elif self.retire_at_checkpoint == checkpoint:
            self.retired = True
            port.retire()
            log.info("task %d retires after checkpoint %d", self.task, checkpoint)

    def stage(self, checkpoint: int, revision: R) -> None:
        """Switch to ``revision`` at ``checkpoint``."""
        self.next, self.retire_at_checkpoint = (checkpoint, revision), 0

    def retire_at(self, checkpoint: int) -> None:
        """Stop emitting after ``checkpoint``."""
        self.retire_at_checkpoint, self.next = checkpoint, None

    def abort(self) -> None:
        self.next, self.retire_at_checkpoint = None, 0

    def done(self, checkpoint: int) -> bool:
        """``checkpoint`` committed: True when it is a retired instance's last one."""
        return self.retired and checkpoint >= self.retire_at_checkpoint
