"""The landing zone's ``readings`` as a PySpark 4 Python streaming data source over its manifests.

The alternative to Spark's file source (``_readings.file_stream``), measured
against it in docs/design.md ("The Spark rollup: source and exactly-once").
An offset is ``{"seq": N}``: every commit the landing manifests
``_manifests/1.json`` .. ``N.json`` list (contiguous from 1; a manifest exists
only once its files do). A micro-batch from ``{"seq": a}`` to ``{"seq": b}``
reads the files of manifests ``a+1..b``, so the offsets Spark logs name the
files exactly, with no listing of the data folders and no log of seen files.
``read`` runs in Spark's Python workers: it reads each file with pyarrow and
adds the partition columns ``date`` and ``site`` from its path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

from ._readings import SCHEMA_DDL, dataset_dir

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType

NAME = "headwater-landing"
ROWS_PER_PARTITION = 250_000
_MANIFEST = re.compile(r"^(\d{12})\.json$")


@dataclass
class Files(InputPartition):
    """One Spark task's share of a micro-batch: landed files, relative to the dataset."""

    files: list[str]


class LandingSource(DataSource):
    """``spark.readStream.format("headwater-landing").load(DATASET_DIR)``."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self) -> str:
        return SCHEMA_DDL

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return ManifestReader(self.options["path"])


class ManifestReader(DataSourceStreamReader):
    """Offsets are manifest sequence numbers; see the module docstring."""

    def __init__(self, path: str) -> None:
        self.path = path

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
            keys = dict(seg.split("=", 1) for seg in Path(rel).parent.parts if "=" in seg)
            for col in ("date", "site"):
                table = table.append_column(
                    col, pa.array([keys[col]] * table.num_rows, pa.string())
                )
            yield from table.select(
                ["sensor", "seq", "ts", "value", "smoothed", "anomaly", "model", "date", "site"]
            ).to_batches()


def manifest_stream(spark: SparkSession, landing: Path) -> DataFrame:
    """The readings as a streaming DataFrame read through the manifests."""
    spark.dataSource.register(LandingSource)
    return spark.readStream.format(NAME).load(str(dataset_dir(landing)))
