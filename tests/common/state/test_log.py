"""headwater.common.state._log: the durable, partitioned record log."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from headwater.common.state import DurableLog, _log


def test_append_returns_first_offsets(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    try:
        assert log.end == 0
        assert log.append([b"a", b"b", b"c"]) == 0
        assert log.append([b"d"]) == 3
        assert log.append([b"e", b"f"], sync=False) == 4
        assert log.append([]) == 6
        assert log.end == 6
    finally:
        log.close()


def test_read_ranges(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    try:
        records = [f"r{i}".encode() for i in range(10)]
        log.append(records)
        assert log.read(0, 3) == records[:3]
        assert log.read(4, 2) == records[4:6]
        assert log.read(7, 100) == records[7:]
        assert log.read(9, 1) == [b"r9"]
        assert log.read(10, 5) == []
        assert log.read(50, 5) == []
        assert log.read(0, 1000) == records
    finally:
        log.close()


def test_read_with_zero_limit_returns_nothing(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    try:
        log.append([b"a", b"b"])
        assert log.read(0, 0) == []
    finally:
        log.close()


def test_records_are_kept_in_offset_order_beyond_255(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    try:
        records = [i.to_bytes(4, "big") for i in range(300)]
        log.append(records)
        assert log.read(250, 20) == records[250:270]
    finally:
        log.close()


def test_reopen_is_durable(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    log.append([b"a", b"b", b"c"])
    log.close()
    log = DurableLog(tmp_path / "p0")
    try:
        assert log.end == 3
        assert log.append([b"d"]) == 3
        assert log.read(0, 10) == [b"a", b"b", b"c", b"d"]
    finally:
        log.close()


def test_reader_sees_appends_after_refresh(tmp_path: Path) -> None:
    writer = DurableLog(tmp_path / "p0")
    writer.append([b"a", b"b"])
    reader = DurableLog(tmp_path / "p0", reader=True)
    try:
        assert reader.reader
        assert reader.end == 2
        assert reader.read(0, 10) == [b"a", b"b"]
        writer.append([b"c", b"d"])
        assert reader.end == 2
        assert reader.read(2, 10) == []
        assert reader.refresh() == 4
        assert reader.end == 4
        assert reader.read(1, 10) == [b"b", b"c", b"d"]
    finally:
        reader.close()
        writer.close()


def test_reader_cannot_append(tmp_path: Path) -> None:
    writer = DurableLog(tmp_path / "p0")
    reader = DurableLog(tmp_path / "p0", reader=True)
    try:
        with pytest.raises(PermissionError):
            reader.append([b"x"])
        assert reader.refresh() == 0
    finally:
        reader.close()
        writer.close()


def test_writer_refresh_is_its_end(tmp_path: Path) -> None:
    writer = DurableLog(tmp_path / "p0")
    try:
        writer.append([b"x", b"y"])
        assert writer.refresh() == 2
    finally:
        writer.close()


def test_reader_close_removes_its_secondary(tmp_path: Path) -> None:
    writer = DurableLog(tmp_path / "p0")
    writer.append([b"x"])
    readers = tmp_path / ".readers"
    first = DurableLog(tmp_path / "p0", reader=True)
    second = DurableLog(tmp_path / "p0", reader=True)
    try:
        entries = sorted(p.name for p in readers.iterdir())
        assert len(entries) == 2
        assert all(name.startswith("p0-") for name in entries)
        first.close()
        assert len(list(readers.iterdir())) == 1
    finally:
        second.close()
        writer.close()
    assert list(readers.iterdir()) == []
    assert (tmp_path / "p0").is_dir()


def test_trim_drops_what_readers_have_passed(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    log.append([b"r%d" % i for i in range(10)])
    reader = DurableLog(tmp_path / "p0", reader=True)
    assert (log.trim(4), log.start, log.end) == (4, 4, 10)
    assert log.trim(3) == 0  # never backwards
    assert log.read(4, 2) == [b"r4", b"r5"]
    with pytest.raises(ValueError, match=r"offset 2 .* was trimmed"):
        log.read(2, 1)
    reader.refresh()
    assert (reader.start, reader.end) == (4, 10)
    assert reader.read(9, 5) == [b"r9"]
    with pytest.raises(PermissionError):
        reader.trim(5)
    assert log.trim(100) == 6  # up to the end, not past it
    log.append([b"r10"])
    log.close()
    again = DurableLog(tmp_path / "p0")
    assert (again.start, again.end, again.read(10, 5)) == (10, 11, [b"r10"])
    again.close()
    reader.close()


def test_an_emptied_log_reopens_at_its_end_never_back_at_zero(tmp_path: Path) -> None:
    """Retention trimmed everything; a reopen (and a reader) still ends where it was, so the
    next append never gets an offset a reader has already passed."""
    log = DurableLog(tmp_path / "p0")
    log.append([b"r%d" % i for i in range(300)])
    assert log.trim(300) == 300
    log.close()
    again = DurableLog(tmp_path / "p0")
    reader = DurableLog(tmp_path / "p0", reader=True)
    try:
        assert (again.start, again.end) == (300, 300)
        assert (reader.start, reader.end) == (300, 300)
        assert again.append([b"new"]) == 300
        assert again.read(300, 10) == [b"new"]
        assert reader.refresh() == 301
        assert reader.read(300, 10) == [b"new"]  # the metadata is never read as a record
        assert again.trim(301) == 1
    finally:
        reader.close()
        again.close()
    last = DurableLog(tmp_path / "p0")
    try:
        assert (last.start, last.end, last.read(301, 5)) == (301, 301, [])
    finally:
        last.close()


def test_a_failed_append_takes_no_offsets(tmp_path: Path) -> None:
    log = DurableLog(tmp_path / "p0")
    try:
        log.append([b"a"])
        log._db.close()  # any write error: here, a closed database
        with pytest.raises(Exception):  # noqa: B017 (rocksdict raises plain Exception)
            log.append([b"b", b"c"])
        assert log.end == 1
    finally:
        log.close()


class _CountingDb:
    """The reader's database, counting its catch-ups."""

    def __init__(self, db: Any) -> None:
        self.db, self.catch_ups = db, 0

    def try_catch_up_with_primary(self) -> None:
        self.catch_ups += 1
        self.db.try_catch_up_with_primary()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.db, name)


def test_a_reader_catches_up_only_when_the_writer_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    writer = DurableLog(tmp_path / "p0")
    writer.append([b"a"])
    reader = DurableLog(tmp_path / "p0", reader=True)
    db = reader._db = _CountingDb(reader._db)  # type: ignore[assignment]
    try:
        assert reader.refresh() == 1 and db.catch_ups == 1
        for _ in range(20):  # nothing written: no catch-up
            assert reader.refresh() == 1
        assert db.catch_ups == 1
        writer.append([b"b", b"c"])
        assert reader.refresh() == 3 and db.catch_ups == 2
        assert reader.read(1, 10) == [b"b", b"c"]
        writer.trim(2)  # not synced, still written: seen
        assert reader.refresh() == 3 and reader.start == 2 and db.catch_ups == 3
        writer._db.flush()  # the records move to a table file, a new write-ahead log
        writer.append([b"d"])
        assert reader.refresh() == 4 and reader.read(3, 1) == [b"d"]
        # at least every CATCH_UP_S, whatever the files say
        seen = db.catch_ups
        later = time.monotonic() + _log.CATCH_UP_S
        monkeypatch.setattr(_log, "_clock", lambda: later)
        assert reader.refresh() == 4 and db.catch_ups == seen + 1
    finally:
        reader.close()
        writer.close()


def test_a_reader_refreshing_beside_a_busy_writer_misses_no_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_log, "_clock", lambda: 0.0)  # no catch-up due by the clock
    writer = DurableLog(tmp_path / "p0")
    reader = DurableLog(tmp_path / "p0", reader=True)
    done = threading.Event()

    def append() -> None:
        for i in range(300):
            writer.append([b"%d" % i], sync=i % 2 == 0)
        done.set()

    appending = threading.Thread(target=append)
    appending.start()
    try:
        while not done.is_set():
            reader.refresh()
        appending.join()
        assert reader.refresh() == 300  # the files alone said there was more
        assert reader.read(0, 300) == [b"%d" % i for i in range(300)]
    finally:
        appending.join()
        reader.close()
        writer.close()
