"""The checkpoint store: snapshots of a container's instances, in RocksDB.

One store per container, opened by its stream manager alone (RocksDB allows
one writer), as Heron gives each container a checkpoint manager. Instances
send their snapshot to the stmgr, which writes it here with a CRC-32 and a
synced write; on restore the stmgr reads and verifies each blob before any
instance starts, so a corrupted checkpoint is found before it can be used.
"""

from __future__ import annotations

import shutil
import struct
import tempfile
import zlib
from pathlib import Path

from rocksdict import AccessType, Options, Rdict, WriteOptions

from .._exceptions import HeadwaterError

_KEY = struct.Struct(">qi")  # checkpoint id, task: sorts by checkpoint
_CRC = struct.Struct(">I")


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

    def save(self, checkpoint_id: int, task: int, blob: bytes) -> int:
        """Store one snapshot durably; return its size in bytes."""
        self._db.put(_KEY.pack(checkpoint_id, task), _CRC.pack(zlib.crc32(blob)) + blob, self._sync)
        return len(blob)

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
            ids.add(_KEY.unpack(key)[0])
        return sorted(ids)

    def prune(self, keep_from: int) -> None:
        """Delete snapshots of checkpoints older than ``keep_from``."""
        self._db.delete_range(_KEY.pack(0, 0), _KEY.pack(keep_from, 0))

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
