"""The landing zone's ``readings`` dataset as a Spark stream (Spark's file source).

The layout (docs/design.md, "The landing zone"): ``ROOT/readings/date=.../site=.../
part-*.parquet``, a file appearing only under its final name and never rewritten,
hidden names (``.``, ``_``: in-progress files, ``_manifests``) ignored. That is
exactly what Spark's file source wants: it lists the folder each micro-batch,
takes the files it has not seen (its checkpoint's ``sources/0`` log keeps the
seen ones, so a restarted query reads each file once), fills the partition
columns ``date`` and ``site`` from the paths (``basePath``), and skips hidden
names. The schema is given, so an empty landing starts a query too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

DATASET = "readings"
# the file columns, then the partition columns Spark reads from the path
SCHEMA_DDL = (
    "sensor STRING, seq BIGINT, ts BIGINT, value DOUBLE, smoothed DOUBLE, anomaly BOOLEAN, "
    "model STRING, date STRING, site STRING"
)


def dataset_dir(landing: Path) -> Path:
    """``landing``'s readings dataset; HeadwaterError saying what to give if it is not one.

    ``landing`` is the landing root (the folder holding ``readings/``); the
    dataset folder itself is refused with a hint, as it would silently read as empty.
    """
    if not landing.is_dir():
        raise HeadwaterError(
            f"--landing {landing}: no such folder; give the landing root (the folder that "
            f"holds {DATASET}/, e.g. $IOT_OUT/landing)"
        )
    if landing.name == DATASET or (landing / "_manifests").is_dir():
        raise HeadwaterError(
            f"--landing {landing} looks like a dataset: give the landing root, its parent "
            f"{landing.parent} (the rollup reads ROOT/{DATASET})"
        )
    return landing / DATASET


def file_stream(spark: SparkSession, landing: Path, max_files: int | None = None) -> DataFrame:
    """The readings as a streaming DataFrame over the landed Parquet files (may not exist yet).

    ``max_files`` caps the files one micro-batch takes (Spark's ``maxFilesPerTrigger``).
    """
    path = str(dataset_dir(landing))
    reader = spark.readStream.schema(SCHEMA_DDL).option("basePath", path)
    if max_files is not None:
        reader = reader.option("maxFilesPerTrigger", str(max_files))
    return reader.parquet(path)
