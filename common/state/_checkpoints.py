"""The checkpoint store a container's snapshot keeper uses: one narrow interface, two backends.

``Checkpoints`` is what ``common/runtime/_snapshots.py`` calls, on its event loop:

- ``save`` a task's snapshot (a delta) on this host's disk, synced (or, with
  ``sync=False``, durable at the next ``sync``: the snapshots of a checkpoint's tasks
  that arrive together take one sync): fast, and the only write a local store makes;
- ``async_publish`` it where it outlives this host, before the checkpoint is
  acknowledged (a no-op for the local backend); raises ``CheckpointStoreError``
  when it cannot, and then the checkpoint is declined;
- ``async_restore`` the tasks' whole states as of a checkpoint (None each for a
  clean start, checkpoint 0); raises ``CorruptCheckpointError`` for a checkpoint
  that cannot be used, ``CheckpointStoreError`` for a store that cannot be
  reached now (the caller tries again);
- ``snapshot`` one task's whole state from this host's copy (a live edit's switch
  reads the checkpoint it switches at, which this host has just saved);
- ``commit`` once a checkpoint is complete and no older one can be restored: fold
  the deltas into each task's base and drop the older ones;
- ``reopen`` the local store after a write error; ``close``.

Backends: ``LocalCheckpoints`` (the default: RocksDB in the container's state
directory, ``CheckpointStore``) and ``S3Checkpoints`` (``_shared_store.py``: the
same RocksDB as the working copy, every snapshot also in an S3-compatible bucket
before it counts, so a container restarted on another host restores its state).
"""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path
from typing import Protocol

from ._store import CheckpointStore

log = logging.getLogger("headwater.container")


class Checkpoints(Protocol):
    """A container's checkpoint store (on its event loop; one owner)."""

    shared: bool  # True: snapshots outlive this host (``async_publish`` does something)

    def save(self, checkpoint: int, task: int, blob: bytes, *, sync: bool = True) -> int: ...

    def sync(self) -> None: ...

    async def async_publish(self, checkpoint: int, task: int, blob: bytes) -> None: ...

    async def async_restore(self, checkpoint: int, tasks: list[int]) -> dict[int, bytes | None]: ...

    def snapshot(self, checkpoint: int, task: int) -> bytes: ...

    def commit(self, keep_from: int) -> None: ...

    def reopen(self) -> None: ...

    def close(self) -> None: ...


class LocalCheckpoints:
    """Snapshots on this host's disk alone (RocksDB): lost with the disk."""

    shared = False

    def __init__(self, state_dir: str | Path) -> None:
        self.state_dir = state_dir
        self.local = CheckpointStore(state_dir)

    def save(self, checkpoint: int, task: int, blob: bytes, *, sync: bool = True) -> int:
        return self.local.save(checkpoint, task, blob, sync=sync)

    def sync(self) -> None:
        self.local.sync()

    async def async_publish(self, checkpoint: int, task: int, blob: bytes) -> None:
        return None  # the synced local write is all there is

    async def async_restore(self, checkpoint: int, tasks: list[int]) -> dict[int, bytes | None]:
        # synchronous on purpose: a local restore blocks no longer than it did before
        return {t: self.local.snapshot(checkpoint, t) if checkpoint else None for t in tasks}

    def snapshot(self, checkpoint: int, task: int) -> bytes:
        return self.local.snapshot(checkpoint, task)

    def commit(self, keep_from: int) -> None:
        self.local.fold(keep_from)  # raises: the next commit folds again, nothing is pruned
        self.local.prune(keep_from)

    def reopen(self) -> None:
        """RocksDB keeps a write error until it is reopened (a full disk, most likely)."""
        with contextlib.suppress(Exception):  # closed already, by a reopen that failed
            self.local.close()
        try:
            self.local = CheckpointStore(self.state_dir)
        except Exception as exc:  # still no room: the next snapshot tries again
            log.warning("cannot reopen the checkpoint store: %s", exc)

    def close(self) -> None:
        self.local.close()
