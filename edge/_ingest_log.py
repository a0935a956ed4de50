"""The agent's ingest log on disk: one ``DurableLog`` per partition, as the ingest's writer
thread holds it (``_ingest.py``).

The writer opens every partition (a folder that existed once and is gone is
not made again: the agent's workdir was removed), appends a batch of readings
spread over the partitions by topic (one topic stays in order in one
partition), checks before each acknowledgement that the folders it wrote into
are still there (``LogGone``), trims what retention gives it, and says what a
failed write most likely means (``describe_write_error``). The folder where
the edge spouts reading the log keep their readers' state is here too
(``share_readers``).
"""

from __future__ import annotations

import errno
import zlib
from collections.abc import Sequence
from pathlib import Path

from headwater.common.state import DurableLog
from headwater.common.wire import encode


def describe_write_error(path: Path, exc: BaseException) -> str:
    """What a failed write under ``path`` most likely means, for a health reason."""
    text = str(exc)
    if (isinstance(exc, OSError) and exc.errno == errno.ENOSPC) or "No space left" in text:
        return f"disk full on {path} (No space left on device)"
    for d in (path, *path.parents):
        if d.exists():
            if d != path:
                return f"workdir {d} is missing {path.relative_to(d)}"
            break
    return f"cannot write {path}: {text}"


def share_readers(path: Path) -> None:
    """The folder where each edge spout reading the log at ``path`` keeps its reader's state,
    writable by every topology's user (as /tmp: each its own, none another's)."""
    readers = path / ".readers"
    readers.mkdir(parents=True, exist_ok=True)
    readers.chmod(0o1777)


class LogGone(Exception):
    """The log's folder was deleted or replaced under the writer."""


class IngestLog:
    """The ``partitions`` of the ingest log under ``log_dir``; ``logs`` while open."""

    def __init__(self, log_dir: Path, partitions: int) -> None:
        self.log_dir = log_dir
        self.partitions = partitions
        self.logs: list[DurableLog] = []  # open while the writer can write (see open)
        self._inodes: list[int] = []  # of each partition's folder, as opened

    def open(self) -> None:
        """Open every partition; a folder that existed once and is gone is not made again."""
        if self.logs:
            return
        had = bool(self._inodes)
        logs: list[DurableLog] = []
        try:
            for p in range(self.partitions):
                path = self.log_dir / f"p{p}"
                if had and not path.is_dir():
                    raise LogGone(path)
                logs.append(DurableLog(path))
        except BaseException:
            for d in logs:
                d.close()
            raise
        self.logs = logs
        self._inodes = [d.path.stat().st_ino for d in logs]

    def close(self) -> None:
        logs, self.logs = self.logs, []
        for d in logs:
            d.close()

    def check_present(self) -> None:
        """Raise ``LogGone`` if a partition's folder was deleted or replaced since opening:
        appends then land in unlinked files, and must not be acknowledged."""
        for d, inode in zip(self.logs, self._inodes, strict=True):
            try:
                same = d.path.stat().st_ino == inode
            except FileNotFoundError:
                same = False
            if not same:
                raise LogGone(d.path)

    def probe(self) -> None:
        """Whether the disk takes writes again: raises where it does not."""
        for d in self.logs:
            d.probe()

    def append(
        self, readings: Sequence[tuple[str, bytes | bytearray]], now_ms: int, counts: dict[int, int]
    ) -> None:
        """Append ``(topic, payload)`` readings, each partition's with one synced write;
        ``counts`` (records per partition) grows as each partition's append returns."""
        by_partition: dict[int, list[bytes]] = {}
        n = len(self.logs)
        for topic, payload in readings:
            p = zlib.crc32(topic.encode()) % n  # one topic stays in order in one partition
            by_partition.setdefault(p, []).append(encode([topic, payload, now_ms]))
        for p, records in by_partition.items():
            self.logs[p].append(records)  # synced: durable when it returns
            counts[p] = counts.get(p, 0) + len(records)

    def trim(self, partition: int, before: int) -> int:
        """Drop ``partition``'s records before ``before`` (none such: nothing); how many."""
        if 0 <= partition < len(self.logs):
            return self.logs[partition].trim(before)
        return 0

    def failure(self, exc: BaseException) -> str:
        """The health reason a failed open or append gives."""
        if isinstance(exc, LogGone):
            path = Path(str(exc))
            gone = next((d for d in reversed(path.parents) if not d.exists()), path)
            what = "ingest log" if gone.is_relative_to(self.log_dir) else "workdir"
            return f"{what} {gone} is gone: readings are no longer acknowledged; restart the agent"
        return describe_write_error(self.log_dir, exc)
