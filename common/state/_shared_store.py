"""A checkpoint store shared by every worker: RocksDB here, an S3-compatible bucket behind it.

The local store (``CheckpointStore``) stays the working copy: a snapshot is
saved there first, synced, as with the local backend. Then, before the
checkpoint is acknowledged, the same bytes go to the bucket (``async_publish``,
on a worker thread): a checkpoint never counts as complete while its state is
only on a disk that can be lost. A snapshot the bucket does not take declines
the checkpoint.

The objects of one container live under its namespace (the worker's prefix,
the cluster, the topology, the container's number)::

    NS/owner                          the id of the local store that last wrote here
    NS/task-T/delta-CHECKPOINT        a task's delta, as saved (CRC-32, then the bytes)
    NS/task-T/base-CHECKPOINT         its whole state as of a checkpoint (CRC-32, bytes)

A commit folds the deltas into each task's local base, as the local backend
does. The bucket gets a task's whole state again (a new base, then the deltas
and bases it replaces are deleted) only once the deltas stored since its base
outweigh it, or number ``MAX_DELTAS``: uploads stay in proportion to what
changes, and a restore reads one base and at most ``MAX_DELTAS`` deltas.

A restore first makes sure the local copy is this namespace's: the first one
of a container's life reads the owner; if another store wrote last (the
container ran on another host since, or this host lost its disk), the local
copy is replaced by the bucket's (each task's newest base at or before the
checkpoint, and the deltas after it, their checksums verified) before the
snapshots are read as the local backend reads them. A clean start (checkpoint
0) deletes what the namespace held: no checkpoint of it can be asked for again.

Nothing here blocks the event loop on the network: every request runs on a
small pool of threads, and so do the reads and writes of a whole state (a new
base, a restore; a commit meanwhile leaves its fold to the next one). A save's
local write and a commit's fold stay on the loop, as with the local backend.
"""

from __future__ import annotations

import asyncio
import logging
import re
import struct
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from ._checkpoints import LocalCheckpoints
from ._s3 import ObjectStore
from ._state import load_delta
from ._store import CorruptCheckpointError

log = logging.getLogger("headwater.container")
MAX_DELTAS = 32
"""A task's base is uploaded again once this many deltas have been stored since it."""
_CRC = struct.Struct(">I")
_OBJECT = re.compile(r"task-(\d+)/(base|delta)-(\d{20})")
T = TypeVar("T")


def seal(blob: bytes) -> bytes:
    """An object's body: the CRC-32 of ``blob``, then ``blob``."""
    return _CRC.pack(zlib.crc32(blob)) + blob


def unseal(raw: bytes, what: str) -> bytes:
    """``seal``'s ``blob``, or CorruptCheckpointError naming ``what``."""
    blob = raw[_CRC.size :]
    if len(raw) < _CRC.size or zlib.crc32(blob) != _CRC.unpack_from(raw)[0]:
        raise CorruptCheckpointError(f"{what} in the shared store fails its checksum")
    return blob


@dataclass
class _Remote:
    """What the bucket holds of one task: its bases and deltas (checkpoint -> bytes)."""

    bases: dict[int, int] = field(default_factory=dict)
    deltas: dict[int, int] = field(default_factory=dict)

    @property
    def base(self) -> int:
        return max(self.bases, default=0)

    def due(self) -> bool:
        """Whether the deltas since the base outweigh it (or number ``MAX_DELTAS``)."""
        base = self.base
        newer = [size for c, size in self.deltas.items() if c > base]
        return bool(newer) and (sum(newer) > self.bases.get(base, 0) or len(newer) >= MAX_DELTAS)


class S3Checkpoints(LocalCheckpoints):
    """The local store, with every snapshot also in an S3-compatible bucket before it counts."""

    shared = True

    def __init__(self, state_dir: str | Path, objects: ObjectStore, namespace: str) -> None:
        super().__init__(state_dir)
        self.objects = objects
        self.namespace = namespace.strip("/")
        self._pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hw-s3")
        self._remote: dict[int, _Remote] = {}
        self._claimed = False  # the bucket's copy and this host's agree (owner checked)
        self._lock: asyncio.Lock | None = None  # a restore from the bucket, or a rebase
        self._rebases: set[asyncio.Task[None]] = set()
        self._rebasing = False  # a base is being read from the local store, off the loop
        self.rebased = 0  # bases uploaded (for tests and metrics)

    # -- keys ----------------------------------------------------------------------------
    def key(self, task: int, kind: str, checkpoint: int) -> str:
        return f"{self.namespace}/task-{task}/{kind}-{checkpoint:020d}"

    @property
    def _owner(self) -> str:
        return f"{self.namespace}/owner"

    def _index(self, listing: dict[str, int]) -> dict[int, _Remote]:
        remote: dict[int, _Remote] = {}
        skip = len(self.namespace) + 1
        for key, size in listing.items():
            m = _OBJECT.fullmatch(key[skip:])
            if m is not None:
                part = remote.setdefault(int(m[1]), _Remote())
                (part.bases if m[2] == "base" else part.deltas)[int(m[3])] = size
        return remote

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, fn, *args)

    def _locked(self) -> asyncio.Lock:
        if self._lock is None:
            self._lock = asyncio.Lock()
        return self._lock

    # -- snapshots in --------------------------------------------------------------------
    async def async_publish(self, checkpoint: int, task: int, blob: bytes) -> None:
        body = seal(blob)
        await self._call(self.objects.put, self.key(task, "delta", checkpoint), body)
        self._remote.setdefault(task, _Remote()).deltas[checkpoint] = len(body)

    def commit(self, keep_from: int) -> None:
        if self._rebasing or self._locked().locked():  # the local copy is being read or
            # replaced off the loop (a new base, a restore): the next commit folds
            log.debug("checkpoint %d: folded at a later commit", keep_from)
            return
        super().commit(keep_from)
        if any(r.due() for r in self._remote.values()):
            self._rebasing = True
            job = asyncio.get_running_loop().create_task(self._rebase(keep_from))
            self._rebases.add(job)
            job.add_done_callback(self._rebases.discard)

    async def async_idle(self) -> None:
        """Wait until no base is being uploaded (tests, benchmarks)."""
        while self._rebases:
            await asyncio.gather(*self._rebases, return_exceptions=True)

    async def _rebase(self, folded: int) -> None:
        """Upload the whole state as of ``folded`` of each task that is due; then delete
        what that base replaces. The whole state is read from the local store on a thread
        (no fold changes the bases meanwhile: ``commit`` waits for the next one)."""
        try:
            async with self._locked():
                for task, remote in sorted(self._remote.items()):
                    if remote.due() and remote.base < folded:
                        await self._rebase_one(task, remote, folded)
        finally:
            self._rebasing = False

    async def _rebase_one(self, task: int, remote: _Remote, folded: int) -> None:
        try:
            whole = await self._call(self.local.snapshot, folded, task)  # O(state)
        except CorruptCheckpointError:
            return  # not this task's any more (a live edit retired it)
        body = seal(whole)
        stale = [c for c in remote.deltas if c <= folded]
        old = [c for c in remote.bases if c < folded]
        try:
            await self._call(self.objects.put, self.key(task, "base", folded), body)
            remote.bases[folded] = len(body)
            self.rebased += 1
            await self._call(
                self.objects.delete,
                [self.key(task, "delta", c) for c in stale]
                + [self.key(task, "base", c) for c in old],
            )
        except Exception as exc:  # the next commit tries again
            log.warning("task %d's base for checkpoint %d: %s", task, folded, exc)
            return
        for c in stale:
            remote.deltas.pop(c, None)
        for c in old:
            remote.bases.pop(c, None)

    # -- a restore -----------------------------------------------------------------------
    async def async_restore(self, checkpoint: int, tasks: list[int]) -> dict[int, bytes | None]:
        async with self._locked():
            if not checkpoint:  # a clean start: nothing here can be asked for again
                listing = await self._call(self.objects.listing, f"{self.namespace}/")
                await self._call(self.objects.delete, sorted(listing))
                self._remote = {}
                await self._claim()
                return dict.fromkeys(tasks)
            fresh = False
            if not self._claimed:
                listing = await self._call(self.objects.listing, f"{self.namespace}/")
                self._remote = self._index(listing)
                owner = await self._call(self.objects.get, self._owner)
                mine = owner is not None and owner.decode() == self.local.identity()
                if not mine or not all(self.local.has(checkpoint, t) for t in tasks):
                    await self._download(checkpoint, tasks)
                    fresh = True
                await self._claim()
            try:
                return await self._call(self._snapshots, checkpoint, tasks)
            except CorruptCheckpointError as exc:
                if fresh:
                    raise
                log.warning("%s: reading checkpoint %d from the shared store", exc, checkpoint)
            await self._download(checkpoint, tasks)
            return await self._call(self._snapshots, checkpoint, tasks)

    def _snapshots(self, checkpoint: int, tasks: list[int]) -> dict[int, bytes | None]:
        """The tasks' whole states from the local copy (on a thread: no fold meanwhile)."""
        return {t: self.local.snapshot(checkpoint, t) for t in tasks}

    async def _claim(self) -> None:
        await self._call(self.objects.put, self._owner, self.local.identity().encode())
        self._claimed = True

    async def _download(self, checkpoint: int, tasks: list[int]) -> None:
        """Replace the local copy with the bucket's, as of ``checkpoint``, for ``tasks``."""
        listing = await self._call(self.objects.listing, f"{self.namespace}/")
        self._remote = self._index(listing)
        wanted: dict[str, tuple[int, str, int]] = {}  # key -> task, kind, checkpoint
        for task in tasks:
            remote = self._remote.get(task, _Remote())
            base = max((c for c in remote.bases if c <= checkpoint), default=0)
            if base:
                wanted[self.key(task, "base", base)] = (task, "base", base)
            for c in remote.deltas:
                if base < c <= checkpoint:
                    wanted[self.key(task, "delta", c)] = (task, "delta", c)
        keys = sorted(wanted)
        bodies = await asyncio.gather(*(self._call(self.objects.get, k) for k in keys))
        got: dict[tuple[int, str, int], bytes] = {}
        for key, body in zip(keys, bodies, strict=True):
            if body is not None:  # deleted since the listing: the chain says if it mattered
                got[wanted[key]] = unseal(body, key)
        chains = {t: self._chain(checkpoint, t, got) for t in tasks}
        await self._call(self._replace_local, chains, got)
        log.info("checkpoint %d of tasks %s read from %s", checkpoint, tasks, self.namespace)

    def _replace_local(
        self, chains: dict[int, tuple[int, list[int]]], got: dict[tuple[int, str, int], bytes]
    ) -> None:
        """The local copy, emptied, then each task's base and deltas (on a thread)."""
        self.local.clear()
        for task, (base, chain) in chains.items():
            if base:
                self.local.import_base(task, base, got[(task, "base", base)])
            for c in chain:
                self.local.save(c, task, got[(task, "delta", c)])

    def _chain(
        self, checkpoint: int, task: int, got: dict[tuple[int, str, int], bytes]
    ) -> tuple[int, list[int]]:
        """The base and the deltas (oldest first) that make ``task``'s state at ``checkpoint``."""
        base = max((c for (t, kind, c) in got if t == task and kind == "base"), default=0)
        chain, at = [], checkpoint
        while True:
            blob = got.get((task, "delta", at))
            if blob is None:
                if at == base and base:
                    break  # the base is the checkpoint's state itself
                raise CorruptCheckpointError(
                    f"checkpoint {checkpoint} of task {task}: the shared store has no "
                    f"{'delta' if at > base else 'base'} for checkpoint {at}"
                )
            try:
                delta = load_delta(blob)
                reset, parent = bool(delta["reset"]), int(delta["base"])
            except Exception as exc:  # checksummed, yet not a delta: written by something else
                raise CorruptCheckpointError(
                    f"checkpoint {at} of task {task} in the shared store is not a snapshot ({exc})"
                ) from None
            chain.append(at)
            if reset or parent <= base:
                if not reset and not base:
                    raise CorruptCheckpointError(
                        f"checkpoint {checkpoint} of task {task} has no base in the shared store"
                    )
                break
            at = parent
        return base, chain[::-1]

    def close(self) -> None:
        for job in self._rebases:
            job.cancel()
        self._pool.shutdown(wait=False, cancel_futures=True)
        self.objects.close()
        super().close()
