"""The checkpoint store: snapshots of a container's instances, in RocksDB.

One store per container, opened by its stream manager alone (RocksDB allows
one writer), as Heron gives each container a checkpoint manager. Instances
send their snapshot to the stmgr, which writes it here with a CRC-32 and a
synced write; on restore the stmgr reads and verifies each blob before any
instance starts, so a corrupted checkpoint is found before it can be used.

Snapshots are incremental (``SnapshotLog``): a blob is a task's delta, staged
under its checkpoint id. Each task also has a base here: its keyed state as
one entry per key, and its ``State``, as of the checkpoint it was folded to.
``fold(checkpoint)`` (on a commit, with the oldest checkpoint a restore may
still ask for) applies the deltas up to that checkpoint to the base, in one
atomic batch; ``snapshot(checkpoint, task)`` gives a task's whole state as of
a checkpoint: the base, and the staged deltas from it to that checkpoint,
following each delta's base, so deltas of later, uncompleted checkpoints are
never read.
"""

from __future__ import annotations

import pickle
import shutil
import struct
import tempfile
import uuid
import zlib
from pathlib import Path
from typing import Any

from rocksdict import AccessType, Options, Rdict, WriteBatch, WriteOptions

from .._exceptions import HeadwaterError
from ._plain import loads
from ._state import load_delta

_KEY = struct.Struct(">qi")  # checkpoint id, task: sorts by checkpoint
_CRC = struct.Struct(">I")
# a task's base sorts after every (checkpoint, task) key (ids are below 2**56)
_META = b"\xffm"  # + task: {"folded": checkpoint, "state": ..., "names": [...]}
_ENTRY = b"\xffk"  # + task, name length, name, pickled key: pickled (key, value)
_IDENTITY = b"\xffi"  # this store's own id, made when it is created (a shared store's owner)
_TASK = struct.Struct(">i")
_NAME = struct.Struct(">iI")


def _after(prefix: bytes) -> bytes:
    """The first key past every key that starts with ``prefix``."""
    return prefix + b"\xff" * 8


def _name_prefix(task: int, name: str) -> bytes:
    raw = name.encode()
    return _ENTRY + _NAME.pack(task, len(raw)) + raw


def _dump(obj: Any) -> bytes:
    return pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)


_UNSYNCED = WriteOptions()


class CorruptCheckpointError(HeadwaterError):
    """A stored snapshot failed its checksum, or is missing."""


class CheckpointStore:
    """Snapshots keyed by (checkpoint id, task). Not thread-safe: one owner."""

    def __init__(self, path: str | Path, *, reader: bool = False) -> None:
        """Open the store; ``reader=True`` reads beside its running owner (for tools, tests)."""
        opts = Options(raw_mode=True)
        self._secondary: str | None = None
        if reader:
            self._secondary = tempfile.mkdtemp(prefix="hw-ckpt-reader-")
            self._db = Rdict(str(path), opts, access_type=AccessType.secondary(self._secondary))
        else:
            Path(path).mkdir(parents=True, exist_ok=True)
            opts.create_if_missing(True)
            self._db = Rdict(str(path), opts)
        self._sync = WriteOptions()
        self._sync.sync = True

    def identity(self) -> str:
        """This store's id: random, made once, kept until its folder is deleted (a shared
        store names the local store that last wrote it, ``_shared_store.py``)."""
        raw = self._db.get(_IDENTITY)
        if raw is None:
            raw = uuid.uuid4().hex.encode()
            self._db.put(_IDENTITY, raw, self._sync)
        return bytes(raw).decode()

    def has(self, checkpoint_id: int, task: int) -> bool:
        """Whether a snapshot of ``task`` for ``checkpoint_id`` is here (unchecked)."""
        return self._db.get(_KEY.pack(checkpoint_id, task)) is not None

    def clear(self) -> None:
        """Delete every snapshot and base (the id stays): before a shared store's copy."""
        self._db.delete_range(_KEY.pack(0, 0), _IDENTITY)
        self._db.delete_range(_ENTRY, _after(_META))

    def import_base(self, task: int, checkpoint: int, whole: bytes) -> None:
        """Make ``whole`` (a task's whole state, ``snapshot``'s format) its base as of
        ``checkpoint``, in place of any it had; deltas after it apply on top."""
        self.save(checkpoint, task, whole)  # a whole snapshot reads as a reset delta
        meta = self._meta(task)
        if meta is not None and meta["folded"] >= checkpoint:  # drop the newer base first
            self._db.delete_range(_ENTRY + _TASK.pack(task), _after(_ENTRY + _TASK.pack(task)))
            self._db.delete(_META + _TASK.pack(task))
        self._fold(checkpoint, task)

    def save(self, checkpoint_id: int, task: int, blob: bytes, *, sync: bool = True) -> int:
        """Store one snapshot (durably, or with ``sync=False`` once ``sync`` is called next);
        return its size in bytes."""
        key, value = _KEY.pack(checkpoint_id, task), _CRC.pack(zlib.crc32(blob)) + blob
        self._db.put(key, value, self._sync if sync else _UNSYNCED)
        return len(blob)

    def sync(self) -> None:
        """Make every write so far durable (one sync of the write-ahead log)."""
        self._db.flush_wal(True)

    def load(self, checkpoint_id: int, task: int) -> bytes:
        """Return the snapshot, or raise CorruptCheckpointError."""
        if self._secondary is not None:
            self._db.try_catch_up_with_primary()
        raw = self._db.get(_KEY.pack(checkpoint_id, task))
        if raw is None:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint_id} has no snapshot for task {task}"
            )
        (crc,) = _CRC.unpack_from(raw)
        blob = bytes(raw[_CRC.size :])
        if zlib.crc32(blob) != crc:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint_id} of task {task} fails its checksum"
            )
        return blob

    def checkpoints(self) -> list[int]:
        """Checkpoint ids with at least one snapshot here, ascending."""
        ids: set[int] = set()
        for key in self._db.keys():  # noqa: SIM118 (an Rdict, not a dict)
            assert isinstance(key, bytes)
            if key[:1] == b"\xff":
                break  # the bases: no more snapshots
            ids.add(_KEY.unpack(key)[0])
        return sorted(ids)

    def prune(self, keep_from: int) -> None:
        """Delete snapshots of checkpoints older than ``keep_from``."""
        self._db.delete_range(_KEY.pack(0, 0), _KEY.pack(keep_from, 0))

    # -- incremental snapshots: a task's base and its deltas --------------------------
    def _meta(self, task: int) -> dict[str, Any] | None:
        raw = self._db.get(_META + _TASK.pack(task))
        return None if raw is None else loads(raw)

    def _chain(self, checkpoint: int, task: int, folded: int) -> list[dict[str, Any]]:
        """The deltas from the base (folded to ``folded``) to ``checkpoint``, oldest first."""
        chain = [load_delta(self.load(checkpoint, task))]
        while not chain[-1]["reset"] and chain[-1]["base"] > folded:
            chain.append(load_delta(self.load(chain[-1]["base"], task)))
        if not chain[-1]["reset"] and not folded:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint} of task {task} has no base to apply to"
            )
        return chain[::-1]

    def _base(self, task: int) -> dict[str, dict[Any, Any]]:
        keyed: dict[str, dict[Any, Any]] = {}
        prefix = _ENTRY + _TASK.pack(task)
        size = len(prefix)
        name, current = "", b""
        values: dict[Any, Any] = {}
        for raw_key, raw in self._db.items(from_key=prefix):
            assert isinstance(raw_key, bytes)
            if not raw_key.startswith(prefix):
                break
            if not raw_key.startswith(current) or not current:
                (length,) = struct.unpack_from(">I", raw_key, size)
                name = raw_key[size + 4 : size + 4 + length].decode()
                current = raw_key[: size + 4 + length]
                values = keyed.setdefault(name, {})
            key, value = loads(raw)
            values[key] = value
        return keyed

    def snapshot(self, checkpoint: int, task: int) -> bytes:
        """A task's whole state as of ``checkpoint`` (``dump_snapshot``'s format), or raise
        CorruptCheckpointError (a delta missing or failing its checksum, or folded away)."""
        if self._secondary is not None:
            self._db.try_catch_up_with_primary()
        meta = self._meta(task)
        folded = meta["folded"] if meta else 0
        if checkpoint < folded:
            raise CorruptCheckpointError(
                f"checkpoint {checkpoint} of task {task} is older than its base ({folded})"
            )
        if meta is not None and checkpoint == folded:
            keyed = self._base(task)
            for name in meta["names"]:
                keyed.setdefault(name, {})
            state = meta["state"]
        else:
            chain = self._chain(checkpoint, task, folded)
            keyed = {} if chain[0]["reset"] else self._base(task)
            if meta is not None and not chain[0]["reset"]:
                for name in meta["names"]:
                    keyed.setdefault(name, {})
            for delta in chain:
                for name, values in delta["keyed"].items():
                    if name in delta["full"]:
                        keyed[name] = dict(values)
                    else:
                        keyed.setdefault(name, {}).update(values)
                for name, keys in delta["deleted"].items():
                    gone = keyed.setdefault(name, {})
                    for key in keys:
                        gone.pop(key, None)
            state = chain[-1]["state"]
        return _dump({"state": state, "keyed": keyed, "extra": None})

    def fold(self, checkpoint: int) -> None:
        """Fold every task's deltas up to ``checkpoint`` (complete) into its base."""
        start, end = _KEY.pack(checkpoint, 0), _KEY.pack(checkpoint + 1, 0)
        tasks = []
        for key in self._db.keys(from_key=start):
            assert isinstance(key, bytes)
            if key >= end or key[:1] == b"\xff":
                break
            tasks.append(_KEY.unpack(key)[1])
        for task in tasks:
            self._fold(checkpoint, task)

    def _fold(self, checkpoint: int, task: int) -> None:
        meta = self._meta(task)
        folded = meta["folded"] if meta else 0
        if checkpoint <= folded:
            return
        chain = self._chain(checkpoint, task, folded)
        names = set() if chain[0]["reset"] or meta is None else set(meta["names"])
        batch = WriteBatch(raw_mode=True)
        for delta in chain:
            if delta["reset"]:
                prefix = _ENTRY + _TASK.pack(task)
                batch.delete_range(prefix, _after(prefix))
            for name, values in delta["keyed"].items():
                names.add(name)
                prefix = _name_prefix(task, name)
                if name in delta["full"] and not delta["reset"]:
                    batch.delete_range(prefix, _after(prefix))
                for key, value in values.items():
                    batch.put(prefix + _dump(key), _dump((key, value)))
            for name, keys in delta["deleted"].items():
                prefix = _name_prefix(task, name)
                for key in keys:
                    batch.delete(prefix + _dump(key))
        meta = {"folded": checkpoint, "state": chain[-1]["state"], "names": sorted(names)}
        batch.put(_META + _TASK.pack(task), _dump(meta))
        # not synced (an fsync here stalled the stmgr's loop 50-90 ms a commit): the base
        # is derived from synced deltas, the batch is atomic, and the prune that follows
        # comes after it in the log, so a power cut loses both or neither; the next
        # synced save syncs them
        self._db.write(batch)

    def corrupt(self, checkpoint_id: int, task: int) -> None:
        """Flip a byte of a stored snapshot (for recovery tests and drills)."""
        key = _KEY.pack(checkpoint_id, task)
        raw = bytearray(self._db.get(key) or b"")
        raw[-1] ^= 0xFF
        self._db.put(key, bytes(raw), self._sync)

    def close(self) -> None:
        self._db.close()
        if self._secondary is not None:
            shutil.rmtree(self._secondary, ignore_errors=True)
