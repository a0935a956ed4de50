"""What a user's Spark job is given: ``JobContext``, the landing, the warehouse, its checkpoints.

A job is a Python file defining ``run(spark, ctx)``: ``spark`` is the session
the platform made (embedded ``local[*]``, or the cluster's standalone master),
``ctx`` a ``JobContext``:

- ``ctx.landing.read(name)`` / ``ctx.landing.stream(name)``: a landed dataset as a
  batch or a streaming DataFrame (``_datasets.Landing``), ``ctx.landing.names()``;
- ``ctx.warehouse``: upserts by key into Hive-style Parquet tables
  (``_warehouse``), idempotent, so a re-run micro-batch writes the same rows;
- ``ctx.checkpoint``: the job's own folder, kept across runs and restarts;
  ``ctx.checkpoint_for(query)`` a query's checkpoint location in it;
- ``ctx.trigger(writer)``: the trigger the job's mode wants (``availableNow``
  for a run that ends, a processing-time interval for a continuous job);
- ``ctx.params``: the job's parameters (strings), ``ctx.count(read=, written=)``:
  rows to add to what the job reports;
- ``ctx.registry``: the master's model registry when the job was run with one
  (``headwater spark run --master URL --token ...``, or submitted with ``headwater spark
  submit --registers NAME``: a token of its own for those models), else None;
  ``ctx.register(data, name, meta=)`` registers a model there (docs/design.md,
  "Training as jobs").

A streaming query written with ``ctx.checkpoint_for`` and a ``ctx.warehouse``
sink is exactly once through a driver killed at any moment: Spark logs a
micro-batch's offsets before running it and re-runs it after a restart, and the
upsert replaces rows by key.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater._registry_client import Registry
from headwater.common._exceptions import HeadwaterError

from . import _warehouse
from ._datasets import Landing

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.readwriter import DataStreamWriter

_QUERY = re.compile(r"[A-Za-z0-9][\w.-]{0,99}", re.ASCII)


class BoundLanding:
    """The landing as a job sees it: ``Landing`` with the job's session bound."""

    def __init__(self, landing: Landing, spark: SparkSession, counts: Counts) -> None:
        self._landing = landing
        self._spark = spark
        self._counts = counts
        self.root = landing.root

    def names(self) -> list[str]:
        return self._landing.names()

    def read(self, name: str) -> DataFrame:
        """Every row committed to dataset ``name`` now (a batch DataFrame)."""
        return self._landing.read(self._spark, name)

    def stream(
        self, name: str, *, source: str = "files", max_files: int | None = None
    ) -> DataFrame:
        """Dataset ``name`` as a stream, each committed row once per query checkpoint."""
        return self._landing.stream(self._spark, name, source=source, max_files=max_files)


class Warehouse:
    """The warehouse folder: tables upserted by key (``_warehouse.upsert``), read back whole."""

    def __init__(self, path: Path, counts: Counts) -> None:
        self.path = path
        self._counts = counts

    def upsert(
        self, table: str, rows: DataFrame | pa.Table, key: list[str], date_column: str = "date"
    ) -> int:
        """Merge ``rows`` into ``table`` by ``key``, one atomic file replace per partition
        (``rows[date_column]``, a string, names it); returns the rows given."""
        import pyarrow as pa

        _table_name(table)
        arrow = rows if isinstance(rows, pa.Table) else rows.toArrow()
        missing = [c for c in [*key, date_column] if c not in arrow.column_names]
        if missing:
            raise HeadwaterError(
                f"upsert into {table!r}: no column {', '.join(missing)} among "
                f"{', '.join(arrow.column_names)}"
            )
        _warehouse.upsert(self.path / table, arrow, key, date_column)
        self._counts.add(written=arrow.num_rows)
        return int(arrow.num_rows)

    def sink(self, table: str, key: list[str], date_column: str = "date") -> Any:
        """A ``foreachBatch`` function that upserts each micro-batch into ``table``."""

        def write(batch: DataFrame, batch_id: int) -> None:
            self.upsert(table, batch, key, date_column)

        return write

    def read(self, table: str) -> pa.Table:
        """The whole table, with its ``date`` partition column (pyarrow)."""
        return _warehouse.read_table(self.path / _table_name(table))


def _table_name(table: str) -> str:
    """``table``, a name that stays a folder of the warehouse; HeadwaterError if not one."""
    if not isinstance(table, str) or not _QUERY.fullmatch(table):
        raise HeadwaterError(f"table {table!r}: letters, digits, '_', '-', '.'")
    return table


@dataclass
class Counts:
    """Rows a job read and wrote: what it says, plus its queries' inputs and its upserts."""

    read: int = 0
    written: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, read: int = 0, written: int = 0) -> None:
        with self._lock:
            self.read += read
            self.written += written


class JobContext:
    """What ``run(spark, ctx)`` is given; see the module docstring."""

    def __init__(
        self,
        spark: SparkSession,
        *,
        name: str,
        landing: Path,
        warehouse: Path,
        checkpoint: Path,
        params: dict[str, str] | None = None,
        continuous: bool = False,
        interval_s: float = 5.0,
        registry: Registry | None = None,
    ) -> None:
        self.name = name
        self.counts = Counts()
        self.landing = BoundLanding(Landing(landing), spark, self.counts)
        self.warehouse = Warehouse(warehouse, self.counts)
        self.checkpoint = checkpoint
        self.params: dict[str, str] = dict(params or {})
        self.continuous = continuous
        self.interval_s = interval_s
        self.registry = registry

    def checkpoint_for(self, query: str) -> str:
        """The checkpoint location of the job's streaming query ``query`` (its own folder)."""
        if not isinstance(query, str) or not _QUERY.fullmatch(query):
            raise HeadwaterError(f"query name {query!r}: letters, digits, '_', '-', '.'")
        return str(self.checkpoint / query)

    def trigger(self, writer: DataStreamWriter) -> DataStreamWriter:
        """``writer`` with the trigger of the job's mode: every ``interval_s`` when
        continuous, else ``availableNow`` (what has landed, then the query ends)."""
        if self.continuous:
            return writer.trigger(processingTime=f"{self.interval_s} seconds")
        return writer.trigger(availableNow=True)

    def count(self, read: int = 0, written: int = 0) -> None:
        """Add rows to what the job reports as read and written (its upserts count already)."""
        self.counts.add(read=read, written=written)

    def register(
        self, data: bytes | str | Path, name: str, *, meta: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Register a model with the master the job was run with (``ctx.registry``);
        the version's record. A job given no master is told how to give one."""
        if self.registry is None:
            raise HeadwaterError(
                f"job {self.name!r} was run with no master to register model {name!r} with: "
                "run it with `headwater spark run JOB.py --master URL --token-file FILE` "
                "(an admin token), submit it with `headwater spark submit JOB.py --registers "
                "NAME`, or write the model to a file and `headwater models register FILE "
                "--name NAME`"
            )
        return self.registry.register(data, name, meta=meta)
