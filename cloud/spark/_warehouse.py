"""The warehouse: rollup tables as Hive-style Parquet folders, one file per partition, upserted.

    WAREHOUSE/<table>/date=YYYY-MM-DD/data.parquet

Each partition (a UTC day of the windows' start) is one Parquet file, replaced
whole by ``os.replace`` of a hidden temporary file (fsynced first), so a plain
reader (``pyarrow.dataset`` with ``partitioning="hive"``, ``spark.read.parquet``)
sees either the file before an upsert or the file after it, never half of one
and never a row twice. ``upsert`` replaces the rows whose key it is given and
keeps the others: applying the same rows twice leaves the same file, which is
what makes the rollup's re-executed micro-batches harmless.

Writers: one rollup at a time (``lock`` holds an exclusive ``flock`` on
``WAREHOUSE/_lock``; the kernel drops it when the holder dies, even by SIGKILL). Each
upsert holds its table's ``TABLE/_lock`` (waiting for it), so writers that take no
warehouse lock (users' Spark jobs, submitted specs, threads) never lose each other's
rows; readers skip ``_``- and ``.``-prefixed files.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from headwater.common._durable import fsync_dir
from headwater.common._exceptions import HeadwaterError

DATA_FILE = "data.parquet"


@contextmanager
def lock(warehouse: Path) -> Iterator[None]:
    """Hold the warehouse's writer lock; HeadwaterError if another process holds it."""
    try:
        warehouse.mkdir(parents=True, exist_ok=True)
        fd = os.open(warehouse / "_lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:  # a file in the way, a read-only disk: say which folder
        raise HeadwaterError(
            f"cannot write the warehouse {warehouse}: {exc.strerror or exc}; give a folder "
            "this user may write (--warehouse)"
        ) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise HeadwaterError(
                f"another rollup is writing {warehouse} (it holds {warehouse / '_lock'}): "
                "stop it first, or give another --warehouse"
            ) from None
        _clear_leftovers(warehouse)
        yield
    finally:
        os.close(fd)


def _clear_leftovers(warehouse: Path) -> None:
    """Temporary files a killed writer left behind (never visible to readers: hidden names),
    each table's under its lock (a job's upsert may be writing one now)."""
    for table_dir in {tmp.parent.parent for tmp in warehouse.glob("*/date=*/.*.tmp")}:
        with _table_lock(table_dir):
            for tmp in table_dir.glob("date=*/.*.tmp"):
                tmp.unlink(missing_ok=True)


def upsert(table_dir: Path, rows: pa.Table, key: Sequence[str], date_column: str) -> int:
    """Merge ``rows`` into the table at ``table_dir``, one atomic file replace per partition.

    ``rows[date_column]`` (a ``YYYY-MM-DD`` string) names each row's partition and
    is not stored in the file. A stored row with the key of a given row is
    replaced by it; the others stay. Returns the number of partitions written.
    """
    if rows.num_rows == 0:
        return 0
    written = 0
    with _table_lock(table_dir):
        for date in sorted(set(rows.column(date_column).to_pylist())):
            part = rows.filter(pc.equal(rows.column(date_column), date))
            _upsert_partition(table_dir / f"date={date}", part.drop_columns([date_column]), key)
            written += 1
    return written


@contextmanager
def _table_lock(table_dir: Path) -> Iterator[None]:
    """Hold the table's writer lock (``TABLE/_lock``, waiting for it): its read-merge-replace
    is one writer's at a time, whoever writes (two jobs, a job and a rollup, two threads);
    a temporary file under it is the holder's, or a dead writer's leftover."""
    table_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(table_dir / "_lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _upsert_partition(folder: Path, rows: pa.Table, key: Sequence[str]) -> None:
    path = folder / DATA_FILE
    if path.exists():
        old = pq.read_table(path)
        new_keys = set(_keys(rows, key))
        keep = pa.array([k not in new_keys for k in _keys(old, key)], type=pa.bool_())
        rows = pa.concat_tables([old.filter(keep), rows.select(old.column_names)])
    rows = rows.sort_by([(k, "ascending") for k in key])
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f".{DATA_FILE}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        pq.write_table(rows, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    fsync_dir(folder)


def _keys(table: pa.Table, key: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    return zip(*(table.column(k).to_pylist() for k in key), strict=True)


def read_table(table_dir: Path) -> pa.Table:
    """The whole table with its ``date`` partition column (empty, no columns, if none yet)."""
    import pyarrow.dataset as ds

    if not table_dir.exists():
        return pa.table({})
    return ds.dataset(table_dir, format="parquet", partitioning="hive").to_table()
