"""A landed dataset as a PySpark 4 Python streaming data source over its manifests.

The alternative to Spark's file source (``_datasets.Landing.stream``), measured
against it in docs/design.md ("The Spark rollup: any dataset, by spec; source and
exactly-once", its "The source, by measurement").
An offset is ``{"seq": N}``: every commit the landing manifests
``_manifests/1.json`` .. ``N.json`` list (contiguous from 1; a manifest exists
only once its files do). A micro-batch from ``{"seq": a}`` to ``{"seq": b}``
reads the files of manifests ``a+1..b``, so the offsets Spark logs name the
files exactly, with no listing of the data folders and no log of seen files.
``read`` runs in Spark's Python workers: it reads each file with pyarrow, adds
the partition columns from its path (unescaped; the null key as null) and a
null column for each column of the schema that the file predates.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

NAME = "headwater-landing"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # the landing's (and Hive's) null key
ROWS_PER_PARTITION = 250_000
# Spark's simple type name -> the pyarrow type factory of a column a file predates
_ARROW = {"bigint": "int64", "int": "int32", "double": "float64", "float": "float32",
          "boolean": "bool_", "string": "string", "date": "date32", "binary": "binary"}  # fmt: skip
_MANIFEST = re.compile(r"^(\d{12})\.json$")


@dataclass
class Files(InputPartition):
    """One Spark task's share of a micro-batch: landed files, relative to the dataset."""

    files: list[str]


class LandingSource(DataSource):
    """``spark.readStream.format("headwater-landing").option("schema_ddl", DDL)
    .option("partitions", "a,b").load(DATASET_DIR)``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return str(self.options["schema_ddl"])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        parts = [p for p in str(self.options.get("partitions", "")).split(",") if p]
        types = {f.name: f.dataType.simpleString() for f in schema.fields}
        return ManifestReader(self.options["path"], types, parts)


class ManifestReader(DataSourceStreamReader):
    """Offsets are manifest sequence numbers; see the module docstring."""

    def __init__(self, path: str, types: dict[str, str], partitions: list[str]) -> None:
        self.path = path
        self.types = types  # column -> Spark's simple type name, in the schema's order
        self.columns = list(types)
        self.keys = partitions  # the partition columns, from each file's path

    def initialOffset(self) -> dict[str, int]:
        return {"seq": 0}

    def latestOffset(self) -> dict[str, int]:
        manifests = Path(self.path) / "_manifests"
        seqs = set()
        if manifests.is_dir():
            for p in manifests.iterdir():
                m = _MANIFEST.match(p.name)
                if m:
                    seqs.add(int(m.group(1)))
        seq = 0
        while seq + 1 in seqs:  # contiguous: a gap is a manifest still being made
            seq += 1
        return {"seq": seq}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[Files]:
        parts: list[Files] = []
        rows = 0
        for seq in range(start["seq"] + 1, end["seq"] + 1):
            doc = json.loads((Path(self.path) / "_manifests" / f"{seq:012d}.json").read_text())
            for f in doc["files"]:
                if not parts or rows >= ROWS_PER_PARTITION:
                    parts.append(Files([]))
                    rows = 0
                parts[-1].files.append(f["path"])
                rows += int(f["rows"])
        return parts

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import pyarrow as pa
        import pyarrow.parquet as pq

        assert isinstance(partition, Files)
        for rel in partition.files:
            table = pq.read_table(Path(self.path) / rel)
            keys = path_keys(rel)
            for col in self.keys:
                table = table.append_column(
                    col, pa.array([keys.get(col)] * table.num_rows, pa.string())
                )
            for col in self.columns:
                if col not in table.column_names:  # a column added after this file
                    kind = _ARROW.get(self.types[col], "string")
                    table = table.append_column(col, pa.nulls(table.num_rows, getattr(pa, kind)()))
            yield from table.select(self.columns).to_batches()


def path_keys(rel: str) -> dict[str, str | None]:
    """The partition values in a landed file's path (unescaped; the null key: None)."""
    from urllib.parse import unquote

    out: dict[str, str | None] = {}
    for seg in Path(rel).parent.parts:
        if "=" in seg:
            key, value = seg.split("=", 1)
            out[key] = None if value == NULL_PARTITION else unquote(value)
    return out


class Layout(Protocol):
    """What the stream needs of a dataset's layout (``_datasets.Layout``)."""

    @property
    def partitions(self) -> tuple[str, ...]: ...

    def ddl(self) -> str: ...


def manifest_stream(spark: SparkSession, path: str, layout: Layout) -> DataFrame:
    """The dataset at ``path`` as a streaming DataFrame read through its manifests."""
    spark.dataSource.register(LandingSource)
    return (
        spark.readStream.format(NAME)
        .option("schema_ddl", layout.ddl())
        .option("partitions", ",".join(layout.partitions))
        .load(path)
    )
