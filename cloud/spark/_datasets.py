"""Any landed dataset in Spark, by name: as a batch DataFrame or as a stream read exactly once.

The landing (``common/connectors/_landing.py``) keeps each dataset as
``ROOT/<dataset>/<key>=<value>/.../part-*.parquet`` with ``_manifests/`` (the
commits, numbered without gaps) and ``_schema.json`` (its columns' kinds, and
the partition keys from the folders, in order). ``Landing`` reads what it
needs from there and nothing else: the columns from ``_schema.json`` (or, for
a dataset landed with a schema of its own, from its first committed file), the
partition columns from ``_schema.json`` (or from that file's folders). Every
partition column is a string, as the folders hold it (a null key: null).

A stream is Spark's file source over the dataset folder by default (its
checkpoint's log of seen files reads each file once across restarts), or the
manifests source (``_landing_source``) with ``source="manifests"``. The schema
is taken when the stream is made: a column the landing adds later (it only
adds nullable ones) is read by the next stream made, e.g. the next run of a
job, or a continuous job's queries restarted on the change (``_job_runner``);
a batch read takes the schema of that moment.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# a landing column's kind -> its Spark SQL type
SPARK_TYPES = {"int64": "BIGINT", "double": "DOUBLE", "bool": "BOOLEAN", "string": "STRING"}
_NAME = re.compile(r"^[A-Za-z0-9][\w.-]*$")
SOURCES = ("files", "manifests")


class DatasetError(HeadwaterError):
    """A dataset that is not there, or not a landing dataset; the message names those that are."""


@dataclass(frozen=True)
class Layout:
    """A dataset's columns as Spark sees them: the file columns, then the partition columns."""

    columns: dict[str, str]  # name -> Spark SQL type (BIGINT, DOUBLE, BOOLEAN, STRING, ...)
    partitions: tuple[str, ...]  # path keys, in folder order; strings

    def ddl(self) -> str:
        """Spark's schema string: the file columns, then the partition columns."""
        cols = [f"`{c}` {t}" for c, t in self.columns.items()]
        return ", ".join([*cols, *(f"`{p}` STRING" for p in self.partitions)])

    def names(self) -> list[str]:
        return [*self.columns, *self.partitions]


class Landing:
    """The landing root ``root``: its datasets by name, read into Spark.

    >>> landing = Landing("/data/landing")  # doctest: +SKIP
    >>> landing.read(spark, "orders").groupBy("shop").count()  # doctest: +SKIP
    """

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)

    def names(self) -> list[str]:
        """The datasets landed here (folders with ``_manifests/`` or ``_schema.json``), sorted."""
        if not self.root.is_dir():
            return []
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir()
            and not p.name.startswith((".", "_"))
            and ((p / "_manifests").is_dir() or (p / "_schema.json").is_file())
        )

    def check_root(self) -> None:
        """``DatasetError`` if the root is missing or is a dataset's own folder."""
        if not self.root.is_dir():
            raise DatasetError(
                f"--landing {self.root}: no such folder; give the landing root (the folder "
                "holding the datasets' folders)"
            )
        if (self.root / "_manifests").is_dir() or (self.root / "_schema.json").is_file():
            raise DatasetError(
                f"--landing {self.root} looks like a dataset: give the landing root, its "
                f"parent {self.root.parent}"
            )

    def path(self, name: str) -> Path:
        """The folder of dataset ``name``; ``DatasetError`` naming the datasets there if none."""
        if not isinstance(name, str) or not _NAME.match(name):
            raise DatasetError(f"{name!r} is not a dataset name (letters, digits, '_', '-', '.')")
        self.check_root()
        if name not in self.names():
            there = ", ".join(self.names()) or "none yet"
            raise DatasetError(f"no dataset {name!r} in {self.root}: its datasets: {there}")
        return self.root / name

    def layout(self, name: str) -> Layout:
        """Dataset ``name``'s columns and partition columns, from the landing itself."""
        folder = self.path(name)
        doc = _schema_doc(folder)
        columns = doc.get("columns")
        partitions = doc.get("partitions")
        first = None
        if not isinstance(columns, dict) or not isinstance(partitions, list):
            first = _first_file(folder)
        if not isinstance(columns, dict):
            if first is None:
                raise DatasetError(f"dataset {name!r} has no committed file yet: nothing to read")
            columns = _file_columns(folder / first)
        else:
            columns = {c: SPARK_TYPES.get(str(k), "STRING") for c, k in columns.items()}
        if not isinstance(partitions, list):
            partitions = [] if first is None else _path_keys(first)
        partitions = [p for p in partitions if isinstance(p, str)]
        columns = {c: k for c, k in columns.items() if c not in partitions}
        return Layout(columns, tuple(partitions))

    def read(self, spark: SparkSession, name: str) -> DataFrame:
        """Every row committed to ``name`` now, as a batch DataFrame."""
        layout = self.layout(name)
        path = str(self.path(name))
        return (
            spark.read.schema(layout.ddl())
            .option("basePath", path)
            .option("recursiveFileLookup", "false")
            .parquet(path)
        )

    def stream(
        self,
        spark: SparkSession,
        name: str,
        *,
        source: str = "files",
        max_files: int | None = None,
    ) -> DataFrame:
        """``name`` as a streaming DataFrame: each committed row once per query checkpoint.

        ``source``: ``files`` (Spark's file source; ``max_files`` caps the files a
        micro-batch takes) or ``manifests`` (the landing's commit log, ``_landing_source``).
        """
        if source not in SOURCES:
            raise HeadwaterError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")
        layout = self.layout(name)
        path = str(self.path(name))
        if source == "manifests":
            from ._landing_source import manifest_stream

            return manifest_stream(spark, path, layout)
        reader = spark.readStream.schema(layout.ddl()).option("basePath", path)
        if max_files is not None:
            reader = reader.option("maxFilesPerTrigger", str(max_files))
        return reader.parquet(path)


def _schema_doc(folder: Path) -> dict[str, object]:
    try:
        doc = json.loads((folder / "_schema.json").read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise DatasetError(f"{folder / '_schema.json'} cannot be read: {exc}") from None
    return doc if isinstance(doc, dict) else {}


def _first_file(folder: Path) -> str | None:
    """The path (relative to ``folder``) of the first file the first manifest lists."""
    from headwater.common.connectors._landing_read import manifests

    for doc in manifests(folder):
        for f in doc.get("files", []):
            return str(f["path"])
    return None


def _file_columns(path: Path) -> dict[str, str]:
    """A Parquet file's columns as Spark SQL types (a type without a plain name: STRING)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    t = pa.types
    checks = (
        (t.is_boolean, "BOOLEAN"),
        (t.is_int8, "TINYINT"),
        (t.is_int16, "SMALLINT"),
        (t.is_int32, "INT"),
        (t.is_int64, "BIGINT"),
        (t.is_float32, "FLOAT"),
        (t.is_float64, "DOUBLE"),
        (t.is_timestamp, "TIMESTAMP"),
        (t.is_date32, "DATE"),
        (t.is_binary, "BINARY"),
    )
    out = {}
    for f in pq.read_schema(path):
        out[f.name] = next((name for check, name in checks if check(f.type)), "STRING")
    return out


def _path_keys(rel: str) -> list[str]:
    return [seg.split("=", 1)[0] for seg in Path(rel).parent.parts if "=" in seg]
