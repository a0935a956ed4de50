"""The durable log: an append-only, partitioned record log in RocksDB.

Producers append (the edge agent's MQTT ingestion will, before acknowledging
the broker); spouts read by offset and keep the offset in checkpointed state,
so after a crash they seek back and replay exactly what followed the last
checkpoint. Each partition is its own RocksDB; one process appends, any
number read (as RocksDB secondaries that catch up with the writer).
"""

from __future__ import annotations

import os
import shutil
import struct
import tempfile
from collections.abc import Iterable
from pathlib import Path

from rocksdict import AccessType, Options, Rdict, WriteBatch, WriteOptions

_OFFSET = struct.Struct(">Q")


class DurableLog:
    """One partition of a durable log.

    ``DurableLog(path)`` opens it for appending (one writer at a time);
    ``DurableLog(path, reader=True)`` opens it for reading beside a writer.
    """

    def __init__(self, path: str | os.PathLike[str], *, reader: bool = False) -> None:
        self.path = Path(path)
        opts = Options(raw_mode=True)
        self.reader = reader
        self._secondary: str | None = None
        if reader:
            # a secondary keeps its own small state beside the log; removed on close
            readers = self.path.parent / ".readers"
            readers.mkdir(exist_ok=True)
            self._secondary = tempfile.mkdtemp(prefix=f"{self.path.name}-", dir=readers)
            self._db = Rdict(
                str(self.path), opts, access_type=AccessType.secondary(self._secondary)
            )
        else:
            self.path.mkdir(parents=True, exist_ok=True)
            opts.create_if_missing(True)
            self._db = Rdict(str(self.path), opts)
        self._sync = WriteOptions()
        self._sync.sync = True
        self._end = self._last_offset() + 1
        self._start = self._first_offset()

    def _first_offset(self) -> int:
        for key in self._db.keys():  # noqa: SIM118 (raw mode: iterating the db fails)
            assert isinstance(key, bytes)
            return int(_OFFSET.unpack(key)[0])
        return self._end

    def _last_offset(self) -> int:
        for key in self._db.keys(backwards=True):
            assert isinstance(key, bytes)
            return int(_OFFSET.unpack(key)[0])
        return -1

    @property
    def end(self) -> int:
        """The offset the next append gets (readers: as of the last refresh)."""
        return self._end

    @property
    def start(self) -> int:
        """The oldest offset still held (records before it were trimmed)."""
        return self._start

    def trim(self, before: int) -> int:
        """Writer: delete the records before offset ``before``; return how many went.

        Retention: the agent trims what every reader's last complete checkpoint
        has passed. Not synced: a crash can only bring trimmed records back.
        """
        if self.reader:
            raise PermissionError("this DurableLog was opened for reading")
        before = min(before, self._end)
        if before <= self._start:
            return 0
        self._db.delete_range(_OFFSET.pack(self._start), _OFFSET.pack(before))
        gone, self._start = before - self._start, before
        return gone

    def append(self, records: Iterable[bytes], *, sync: bool = True) -> int:
        """Append records atomically; return the offset of the first. Durable when it returns."""
        if self.reader:
            raise PermissionError("this DurableLog was opened for reading")
        batch = WriteBatch(raw_mode=True)
        first = self._end
        for record in records:
            batch.put(_OFFSET.pack(self._end), record)
            self._end += 1
        self._db.write(batch, self._sync if sync else WriteOptions())
        return first

    def refresh(self) -> int:
        """Readers: catch up with the writer; return the new end offset."""
        if self.reader:
            self._db.try_catch_up_with_primary()
            self._end = self._last_offset() + 1
            self._start = self._first_offset()
        return self._end

    def read(self, offset: int, limit: int) -> list[bytes]:
        """Up to ``limit`` records starting at ``offset`` (fewer at the end)."""
        out: list[bytes] = []
        if offset >= self._end or limit <= 0:
            return out
        if offset < self._start:
            raise ValueError(f"offset {offset} of {self.path} was trimmed (it starts at "
                             f"{self._start})")  # fmt: skip
        expected = _OFFSET.pack(offset)
        for key, value in self._db.items(from_key=expected):
            if not out and key != expected:  # trimmed since the last refresh
                raise ValueError(f"offset {offset} of {self.path} was trimmed")
            out.append(value)
            if len(out) >= limit:
                break
        return out

    def close(self) -> None:
        self._db.close()
        if self._secondary is not None:
            shutil.rmtree(self._secondary, ignore_errors=True)
