"""Exactly-once recovery in a container: snapshots in, a restore, snapshots handed out.

Snapshots in: each instance's snapshot (a delta) for a checkpoint goes into the
container's checkpoint store (``common/state/_checkpoints.py``: RocksDB, synced once
for the snapshots that arrive together;
with a shared store also into its bucket, off the event loop, before anything
is said) and is acknowledged to the topology master (declined if it could not
be stored); a commit folds the deltas into each task's base once no older
checkpoint can be restored. A restore: the master begins a new epoch at the
last complete checkpoint; the container kills its instances, forgets the
previous epoch's frames, reads the tasks' snapshots (a shared store that cannot
be reached is asked again, with backoff, until it answers or a newer restore
comes: a checkpoint is declared unusable only when it is), starts every local
instance again and hands each its snapshot when it says hello (a ``Handout``);
once all have theirs it acknowledges. A live edit's switch starts its new
instances through the same handout (``hand_out``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

from .._retry import RetryPolicy
from ..state import CorruptCheckpointError
from ..state._checkpoints import Checkpoints, LocalCheckpoints
from ..state._s3 import CheckpointStoreError
from ..wire._control import Restore
from ..wire.proto import runtime_pb2 as pb
from ._loaded_revisions import LoadedRevisions
from ._procs import terminate
from ._session import MasterSession
from ._stmgr import StreamManager
from ._supervisor import Supervisor

log = logging.getLogger("headwater.container")
STORE_RETRY = RetryPolicy(initial=0.5, maximum=10.0)
"""Asking a shared checkpoint store that cannot be reached again, during a restore."""


@dataclass
class Handout:
    """Snapshots waiting for the instances a restore (or a switch) starts."""

    order: pb.Restore  # the checkpoint (and revision) they start from
    snapshots: dict[int, bytes | None]  # task -> its blob (None: start empty)
    starting: set[int]
    done: Callable[[pb.Restore], Coroutine[Any, Any, None]]  # the ack once all have theirs
    handed: set[int] = field(default_factory=set)


class Snapshots:
    def __init__(
        self,
        store: Checkpoints | str,
        stmgr: StreamManager,
        supervisor: Supervisor,
        revisions: LoadedRevisions,
        session: MasterSession,
        on_rollback: Callable[[], None],
    ) -> None:
        """``store``: the checkpoint store (a folder: the local one there)."""
        self.store = LocalCheckpoints(store) if isinstance(store, str) else store
        self._stmgr = stmgr
        self._supervisor = supervisor
        self._revisions = revisions
        self._session = session
        self._on_rollback = on_rollback  # a restore overrides a staged edit
        self.handout: Handout | None = None  # the one in progress
        # sees every one acknowledged, of the current epoch
        self.watch_state: Callable[[int, int, bytes], None] | None = None
        self.publish_s: list[float] = []  # the last saves' seconds in a shared store
        self._store_failing = False  # said once at warning level, then at debug
        self._publishing: set[asyncio.Task[None]] = set()  # publications and acks under way
        # saved, not synced yet: (task, checkpoint, epoch, size, blob), acknowledged once synced
        self._unsynced: list[tuple[int, int, int, int, bytes]] = []

    # -- snapshots in ---------------------------------------------------------------
    def on_state(self, task: int, checkpoint: int, blob: bytes) -> None:
        shared = self.store.shared
        try:  # a local store: synced (and acknowledged) with the others that came with it
            size = self.store.save(checkpoint, task, blob, sync=shared)
        except Exception as exc:  # rocksdict raises its own errors (a full disk, most likely)
            self._not_saved([(task, checkpoint, self._stmgr.epoch)], exc)
            return
        if shared:  # acknowledged once it outlives this host
            self._send(self._publish(task, checkpoint, blob, size, self._stmgr.epoch))
            return
        if not self._unsynced:
            asyncio.get_running_loop().call_soon(self._sync)
        self._unsynced.append((task, checkpoint, self._stmgr.epoch, size, blob))

    def _sync(self) -> None:
        """One sync for the snapshots saved since the last (the instances' snapshots of a
        checkpoint arrive together), then their acknowledgements."""
        saved, self._unsynced = self._unsynced, []
        if not saved:  # closed meanwhile
            return
        try:
            self.store.sync()
        except Exception as exc:
            self._not_saved([(task, ckpt, epoch) for task, ckpt, epoch, _, _ in saved], exc)
            return
        if self._session.stub is not None:  # one call for them all
            acks = [(task, ckpt, epoch, size, "") for task, ckpt, epoch, size, _ in saved]
            self._send(self._session.ack_checkpoints(acks))
        if self.watch_state is not None:
            for task, checkpoint, epoch, _, blob in saved:
                if epoch == self._stmgr.epoch:  # not one a restore rolled back meanwhile
                    self.watch_state(task, checkpoint, blob)

    def _not_saved(self, snapshots: list[tuple[int, int, int]], exc: Exception) -> None:
        """Not acknowledged: the checkpoint fails and the master says so; RocksDB keeps a
        write error until it is reopened, so reopen it for the next checkpoint."""
        for task, checkpoint, _ in snapshots:
            log.error(
                "the snapshot of task %d for checkpoint %d was not saved: %s", task, checkpoint, exc
            )
        self.store.reopen()
        for task, checkpoint, epoch in snapshots:
            self._ack(task, checkpoint, 0, declined=str(exc) or repr(exc), epoch=epoch)

    async def _publish(
        self, task: int, checkpoint: int, blob: bytes, size: int, epoch: int
    ) -> None:
        started = time.perf_counter()
        try:
            await self.store.async_publish(checkpoint, task, blob)
        except Exception as exc:  # CheckpointStoreError, most likely: declined, never acked
            say = log.debug if self._store_failing else log.warning
            self._store_failing = True
            say(
                "the snapshot of task %d for checkpoint %d is not in the shared store: %s",
                task,
                checkpoint,
                exc,
            )
            self._ack(
                task, checkpoint, 0, declined=f"the shared checkpoint store: {exc}", epoch=epoch
            )
            return
        if self._store_failing:
            log.info("the shared checkpoint store takes snapshots again")
            self._store_failing = False
        self.publish_s = [*self.publish_s[-99:], time.perf_counter() - started]
        self._ack(task, checkpoint, size, epoch=epoch)
        if self.watch_state is not None and epoch == self._stmgr.epoch:  # (not rolled back)
            self.watch_state(task, checkpoint, blob)

    def _ack(
        self, task: int, checkpoint: int, size: int, declined: str = "", epoch: int | None = None
    ) -> None:
        """``epoch``: the one the snapshot was taken in (default: the current one)."""
        if self._session.stub is not None:
            ack = (task, checkpoint, self._stmgr.epoch if epoch is None else epoch, size, declined)
            self._send(self._session.ack_checkpoint(*ack))

    def _send(self, call: Coroutine[Any, Any, None]) -> None:
        """Run ``call`` on the loop, held until it is done (the loop keeps weak references)."""
        job = asyncio.get_running_loop().create_task(call)
        self._publishing.add(job)
        job.add_done_callback(self._publishing.discard)

    def prune(self, keep_from: int) -> None:
        """``keep_from`` is the oldest checkpoint a restore may ask for: fold the deltas
        up to it into the tasks' bases, then drop the older ones."""
        try:
            self.store.commit(keep_from)
        except Exception as exc:  # a missing delta, a full disk: the next commit folds again
            log.warning("cannot fold checkpoint %d into the tasks' bases: %s", keep_from, exc)

    def close(self) -> None:
        self._unsynced.clear()  # never acknowledged: the checkpoint is not complete
        self.store.close()

    # -- a restore ------------------------------------------------------------------
    async def restore(self, order: pb.Restore) -> None:
        if order.epoch <= self._stmgr.epoch:
            if order.epoch == self._stmgr.epoch and self.handout is None:
                await self._session.ack_restore(order, ok=True)  # a repeated order: done
            return  # an old order, or this one still in progress (it acks when done)
        log.info(
            "epoch %d: restoring checkpoint %d under revision %d",
            order.epoch,
            order.checkpoint_id,
            order.revision,
        )
        revision = order.revision or 1  # an edge domain's master has no revisions
        if self._revisions.get(revision) is None:
            log.error("asked to restore revision %d, which was never sent here", revision)
            return
        self._on_rollback()
        self._revisions.use(revision)
        procs = self._supervisor.kill_all()
        self._stmgr.reset(order.epoch)
        await asyncio.get_running_loop().run_in_executor(None, terminate, procs, 1.0)
        tasks = self._revisions.local_tasks
        try:
            snapshots = await self._read(order, tasks)
        except CorruptCheckpointError as exc:
            log.warning("%s", exc)
            self.handout = None
            await self._session.ack_restore(order, ok=False, error=str(exc))
            return
        if snapshots is None:
            return  # a newer restore began meanwhile
        if not tasks:
            # an empty container (more containers than instances, or an edit that moved
            # everything away) has nothing to restore: waiting for an instance's hello
            # here kept the whole domain RESTORING forever
            await self._session.ack_restore(order, ok=True)
            return
        self.hand_out(Handout(order, snapshots, set(tasks), self._restored))
        for task in tasks:
            self._supervisor.start(task)

    async def _read(self, order: pb.Restore, tasks: list[int]) -> dict[int, bytes | None] | None:
        """The tasks' snapshots as of the order's checkpoint; None once a newer order came."""
        backoff = STORE_RETRY.start()
        while True:
            try:
                return await self.store.async_restore(order.checkpoint_id, tasks)
            except CheckpointStoreError as exc:  # cannot reach it: no reason to give up on it
                delay = backoff.next_delay()
                log.warning(
                    "checkpoint %d: %s; asking again in %.1fs", order.checkpoint_id, exc, delay
                )
            await asyncio.sleep(delay)
            if self._stmgr.epoch != order.epoch:
                return None

    async def _restored(self, order: pb.Restore) -> None:
        await self._session.ack_restore(order, ok=True)

    # -- snapshots out ----------------------------------------------------------------
    def hand_out(self, handout: Handout) -> None:
        """Give each of ``handout.starting`` its snapshot when it says hello."""
        self.handout = handout

    def add_snapshot(self, task: int, blob: bytes | None) -> None:
        """A snapshot made after the handout began (a rescaled component's share of keys)."""
        if self.handout is not None:
            self.handout.snapshots[task] = blob

    def on_hello(self, task: int) -> None:
        h = self.handout
        if h is None or task not in h.snapshots:
            return
        self._stmgr.send_control(
            task, Restore(checkpoint=h.order.checkpoint_id, blob=h.snapshots[task])
        )
        h.handed.add(task)
        if h.handed >= h.starting:
            self.handout = None
            asyncio.get_running_loop().create_task(h.done(h.order))
