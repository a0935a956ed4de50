"""The durable log: an append-only, partitioned record log in RocksDB.

Producers append (the edge agent's MQTT ingestion will, before acknowledging
the broker); spouts read by offset and keep the offset in checkpointed state,
so after a crash they seek back and replay exactly what followed the last
checkpoint. Each partition is its own RocksDB; one process appends, any
number read (as RocksDB secondaries that catch up with the writer).

Offsets never go back: a trim also records, under a metadata key outside the
offset key space, the offset it trimmed to, so a log that retention emptied
reopens (and is seen by readers) with its end where it was, not at 0. A
reader holding an offset past the end therefore means the log itself was
lost or replaced, and the log spout says so instead of waiting forever.

A reader's catch-up reads the writer's manifest and write-ahead log (about 1 ms
of CPU), and an idle log spout asks for one 20 times a second. Every write the
writer makes goes to those files first, so a reader first looks at their names
and sizes (a few ``stat`` calls) and catches up only when they changed since its
last catch-up, and at least every ``CATCH_UP_S`` whatever they say.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import struct
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path

from rocksdict import AccessType, Options, Rdict, WriteBatch, WriteOptions

from .._exceptions import HeadwaterError

_OFFSET = struct.Struct(">Q")
# not 8 bytes long, so never mistaken for an offset; sorts after every offset below 2^64 - 2^48
_TRIMMED = b"\xff\xffmeta:trimmed"
_PROBE = b"\xff\xffmeta:probe"
CATCH_UP_S = 2.0
"""A reader catches up at least this often even when the writer's files look unchanged."""
_clock = time.monotonic


def _files_mark(path: Path) -> tuple[tuple[str, int, int, int], ...]:
    """What a writer's write changes in its database folder: the write-ahead logs'
    (``*.log``) and manifests' sizes and times, ``CURRENT``'s (replaced when a new manifest
    starts) and the table files' names (a flush or compaction makes new ones)."""
    mark = []
    with os.scandir(path) as entries:
        for entry in entries:
            name = entry.name
            if name.endswith(".sst"):
                mark.append((name, 0, 0, 0))
            elif name.endswith(".log") or name.startswith("MANIFEST-") or name == "CURRENT":
                try:
                    st = entry.stat()
                except FileNotFoundError:  # a log deleted after a flush: its name went too
                    continue
                mark.append((name, st.st_ino, st.st_size, st.st_mtime_ns))
    return tuple(sorted(mark))


def _offsets(keys: Iterable[object]) -> Iterable[int]:
    for key in keys:
        assert isinstance(key, bytes)
        if len(key) == _OFFSET.size:
            yield int(_OFFSET.unpack(key)[0])


class LogOffsetError(HeadwaterError):
    """A reader's offset is past the log's end: the log went back (deleted or replaced).

    Offsets of a log never go back, so this is never a reader that is merely early;
    reading on would silently skip (or re-read as new) what follows.
    """


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
        self._mark: tuple[tuple[str, int, int, int], ...] | None = None  # at the last catch-up
        self._caught_up = _clock()
        self._load_bounds()

    def _load_bounds(self) -> None:
        """End and start from the keys and the trim mark (the end never below the mark)."""
        raw = self._db.get(_TRIMMED)
        trimmed = int(_OFFSET.unpack(raw)[0]) if isinstance(raw, bytes) else 0
        last = next(iter(_offsets(self._db.keys(backwards=True))), -1)
        self._end = max(last + 1, trimmed)
        self._start = next(iter(_offsets(self._db.keys())), self._end)

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
        has passed. The trim point is written in the same batch as the delete,
        so the end survives a reopen of an emptied log. Not synced: a crash can
        only bring trimmed records back, with the trim point before them.
        """
        if self.reader:
            raise PermissionError("this DurableLog was opened for reading")
        before = min(before, self._end)
        if before <= self._start:
            return 0
        batch = WriteBatch(raw_mode=True)
        batch.delete_range(_OFFSET.pack(self._start), _OFFSET.pack(before))
        batch.put(_TRIMMED, _OFFSET.pack(before))
        self._db.write(batch, WriteOptions())
        gone, self._start = before - self._start, before
        return gone

    def append(self, records: Iterable[bytes], *, sync: bool = True) -> int:
        """Append records atomically; return the offset of the first. Durable when it returns."""
        if self.reader:
            raise PermissionError("this DurableLog was opened for reading")
        batch = WriteBatch(raw_mode=True)
        first = end = self._end
        for record in records:
            batch.put(_OFFSET.pack(end), record)
            end += 1
        self._db.write(batch, self._sync if sync else WriteOptions())
        self._end = end  # only once written: a failed append (disk full) can be retried
        return first

    def probe(self) -> None:
        """Writer: a synced write of metadata only; raises if the disk takes no writes."""
        if self.reader:
            raise PermissionError("this DurableLog was opened for reading")
        self._db.put(_PROBE, _OFFSET.pack(self._end), self._sync)

    def refresh(self) -> int:
        """Readers: catch up with the writer (when its files changed since the last time, or
        ``CATCH_UP_S`` went by); return the new end offset."""
        if self.reader:
            try:
                mark: tuple[tuple[str, int, int, int], ...] | None = _files_mark(self.path)
            except OSError:  # the folder gone: the catch-up says what RocksDB makes of it
                mark = None
            now = _clock()
            if mark is None or mark != self._mark or now - self._caught_up >= CATCH_UP_S:
                # the mark first: a write after it shows in the next one
                self._db.try_catch_up_with_primary()
                self._load_bounds()
                self._mark, self._caught_up = mark, now
        return self._end

    def read(self, offset: int, limit: int) -> list[bytes]:
        """Up to ``limit`` records starting at ``offset`` (fewer at the end)."""
        out: list[bytes] = []
        if offset >= self._end or limit <= 0:
            return out
        if offset < self._start:
            raise ValueError(
                f"offset {offset} of {self.path} was trimmed (it starts at {self._start})"
            )
        expected = _OFFSET.pack(offset)
        for key, value in self._db.items(from_key=expected):
            assert isinstance(key, bytes)
            if len(key) != _OFFSET.size:
                break  # the metadata after the last offset
            if not out and key != expected:  # trimmed since the last refresh
                raise ValueError(f"offset {offset} of {self.path} was trimmed")
            out.append(value)
            if len(out) >= limit:
                break
        return out

    def close(self) -> None:
        """Close; never raises. Appends were synced, so a database already failed (a full
        disk: "Writer has previous error") or closed loses nothing by failing to close."""
        with contextlib.suppress(Exception):  # rocksdict raises plain Exception
            self._db.close()
        if self._secondary is not None:
            shutil.rmtree(self._secondary, ignore_errors=True)
