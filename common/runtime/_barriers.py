"""Checkpoints in an instance: the first restore, marker alignment, snapshots, and
the revision a live edit stages to switch at a checkpoint.

A bolt aligns on markers (Chandy-Lamport with alignment, as Flink's
``SingleCheckpointBarrierHandler``): once a marker for checkpoint N came from
an input task, that input's frames are held back (``stash``) until markers
came from every input; then the instance snapshots its state, sends a marker
to every downstream task (after everything it emitted before) and its
snapshot to the stmgr, and replays what it held. A snapshot is incremental
(``SnapshotLog``): the keys changed since a checkpoint the store has folded.
A spout snapshots when its stmgr says ``TakeCheckpoint``.

A staged revision (``Prepare``) takes effect at its switch checkpoint, right
after the snapshot: an untouched instance routes with the new plan from
then on; a retiring one stops emitting and exits once that checkpoint
commits. Runs on the executor thread only.
"""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from ..api import Bolt, Spout, Topology
from ..plan import load_topology, plan_from_json, restrict
from ..plan._routing import Router
from ..state import StatefulComponent
from ..state._state import SnapshotLog, load_snapshot
from ..wire import Kind, marker_frame, parse_frame, state_frame
from ..wire._control import ControlError, Prepare, Restore, decode_control

if TYPE_CHECKING:
    from ._instance import Instance

log = logging.getLogger("headwater.instance")


class Barriers:
    """One instance's checkpoint barriers and staged revision.

    ``seen`` (the inputs whose marker for the current barrier arrived) is
    mutated in place only: the executor's hot path holds a reference to it.
    """

    def __init__(self, inst: Instance) -> None:
        self.inst = inst
        self.barrier = 0
        self.seen: set[int] = set()
        self.stash: list[bytes] = []
        self.checkpoints = 0
        self.log = SnapshotLog()  # what each (incremental) snapshot carries
        # a staged revision: (switch checkpoint, topology, ids, router), or retire at one
        self.next: tuple[int, Topology, dict[str, list[int]], Router] | None = None
        self.retire_at = 0

    def await_restore(self) -> list[bytes]:
        """Block until the stmgr hands over this task's snapshot; keep what came before."""
        inst = self.inst
        early: list[bytes] = []
        while True:
            raw = inst.inbox.get(timeout=0.5)
            if raw is None:
                if inst.gateway.eof.is_set() or inst.stopping:
                    raise SystemExit(0)
                continue
            f = parse_frame(raw)
            msg = None
            if f.kind == Kind.CONTROL:
                try:
                    msg = decode_control(f.payload)
                except ControlError as exc:
                    log.warning("task %d: dropping a malformed control frame: %s", inst.task, exc)
                    continue
            if not isinstance(msg, Restore):
                early.append(raw)
                continue
            inst.restored_from = msg.checkpoint
            if msg.blob is not None:
                inst.state, inst.keyed, _ = load_snapshot(msg.blob)
            log.info("task %d restored from checkpoint %d", inst.task, inst.restored_from)
            return early

    def on_marker(self, src: int, checkpoint: int, comp: Spout | Bolt) -> None:
        if checkpoint < self.barrier:
            return  # from a checkpoint already taken: cannot happen in one epoch
        if checkpoint > self.barrier:
            self.barrier = checkpoint
            self.seen.clear()
        self.seen.add(src)
        if self.seen >= self.inst.sources:
            self.take_snapshot(checkpoint)
            self.seen.clear()
            stash, self.stash = self.stash, []
            for raw in stash:
                self.inst.handle(raw, comp)

    def take_snapshot(self, checkpoint: int) -> None:
        inst = self.inst
        comp = inst.component_obj
        if isinstance(comp, StatefulComponent):
            comp.pre_save(checkpoint)
        comp.on_checkpoint(checkpoint)
        blob = self.log.dump(checkpoint, inst.state, inst.keyed)
        # everything emitted before the barrier leaves before the markers
        inst.emitter.flush_all()
        for task in inst.downstream:
            inst._send(marker_frame(task, inst.task, checkpoint))
        inst._send(state_frame(inst.task, checkpoint, blob))
        self.checkpoints += 1
        if self.next is not None and self.next[0] == checkpoint:
            _, topology, ids, router = self.next
            self.next = None
            inst.switch_to(topology, ids, router)
            log.info(
                "task %d routes with the new revision from checkpoint %d", inst.task, checkpoint
            )
        elif self.retire_at == checkpoint:
            inst.retired = True
            inst.emitter.flush_all()
            log.info("task %d retires after checkpoint %d", inst.task, checkpoint)

    def prepare(self, msg: Prepare) -> None:
        """Stage a revision: retire at its switch checkpoint, or load its routing."""
        inst = self.inst
        if msg.retire:
            self.retire_at, self.next = msg.at, None
            return
        with open(msg.plan) as f:
            plan = plan_from_json(f.read())
        topology = restrict(load_topology(msg.file, msg.topology, msg.domain, msg.labels), plan)
        ids = plan.ids()
        router = Router(topology, inst.component, inst.ctx, inst.task * 7919 + os.getpid(), ids)
        self.next, self.retire_at = (msg.at, topology, ids, router), 0

    def abort(self) -> None:
        self.next, self.retire_at = None, 0

    def committed(self, checkpoint: int) -> bool:
        """``checkpoint`` is committed: later snapshots may build on it (``SnapshotLog``).
        True when a retired instance's last checkpoint is published: it is done."""
        self.log.committed(checkpoint)
        return self.inst.retired and checkpoint >= self.retire_at
