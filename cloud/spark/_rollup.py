"""``headwater spark rollup``: hourly and daily rollups of the landed readings, exactly once.

Two streaming queries in one session, ``hourly`` and ``daily``, each over the
readings stream (``_readings.file_stream``), each with its own checkpoint
(``CHECKPOINT/hourly``, ``CHECKPOINT/daily``):

    readings -> event_time = ts (ms) -> withWatermark(event_time, WATERMARK)
      -> each row twice: keyed by (site, sensor) and by (site, NULL)
      -> groupBy(window(event_time, 1 hour | 1 day), site, sensor)
      -> count, sum, mean, min, max, stddev (sample), p95 (approximate), anomalies
      -> UPDATE output mode -> foreachBatch: upsert into the warehouse
         (hourly_sensor + hourly_site, or daily_sensor + daily_site)

Why this is exactly once through a SIGKILL of the driver at any moment:
Spark writes a micro-batch's offsets before running it and its commit after
the sink returned; the state store versions follow the batch ids. A driver
killed before the commit re-runs that batch on restart with the same offsets
(the same files) over the state of the batch before. In update mode the sink
gets each changed window's whole current aggregate, not a delta, and
``_warehouse.upsert`` replaces rows by key with one atomic file replace per
partition, so applying a batch a second time writes the same rows again.
Counts, sums, min and max are then exact; the p95 sketch is approximate and
may differ in its last digits when a batch is re-run.

Windows are written while they are open (the row of the current hour grows
with each micro-batch) and are final once the watermark passes their end; rows
whose event time is below the watermark when they arrive are dropped by Spark
and counted (``numRowsDroppedByWatermark``), and each pass prints how many.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.common._exceptions import HeadwaterError

from . import _warehouse
from ._readings import file_stream
from ._session import session, stoppable_start

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

# query name -> window length, Spark's spelling
GRAINS = {"hourly": "1 hour", "daily": "1 day"}
KEY = ("site", "sensor", "window_start")  # sensor NULL: the site's row, before the split
SUM_TYPE = "decimal(38,12)"  # each value rounded to 12 decimal places, then summed exactly


@dataclass(frozen=True)
class RollupConfig:
    """One rollup run: where it reads and writes, and how it paces itself."""

    landing: Path
    warehouse: Path
    checkpoint: Path
    once: bool = False
    interval_s: float = 5.0
    watermark: str = "10 minutes"
    master: str | None = None
    max_files: int | None = None  # per micro-batch (maxFilesPerTrigger); None: all new
    source: str = "files"  # "files" (Spark's file source) or "manifests" (_landing_source)


def tables(grain: str) -> tuple[str, str]:
    """The warehouse tables a grain writes: per sensor, per site."""
    return f"{grain}_sensor", f"{grain}_site"


def aggregate(readings: DataFrame, grain: str, watermark: str) -> DataFrame:
    """The streaming aggregation of one grain: a row per (window, site, sensor or NULL)."""
    from pyspark.sql import functions as F

    rows = (
        readings.withColumn("event_time", F.timestamp_millis("ts"))
        .withWatermark("event_time", watermark)
        .select(
            "event_time",
            "site",
            F.explode(F.array(F.col("sensor"), F.lit(None).cast("string"))).alias("sensor"),
            "value",
            F.col("anomaly").cast("long").alias("anomaly"),
        )
    )
    agg = rows.groupBy(F.window("event_time", GRAINS[grain]), "site", "sensor").agg(
        F.count(F.lit(1)).alias("count"),
        # an exact decimal sum: the same whatever order the rows come in (a double sum is not)
        F.sum(F.col("value").cast(SUM_TYPE)).cast("double").alias("sum"),
        F.min("value").alias("min"),
        F.max("value").alias("max"),
        F.stddev_samp("value").alias("stddev"),
        F.percentile_approx("value", 0.95).alias("p95"),
        F.sum("anomaly").alias("anomalies"),
    )
    return agg.select(
        "site",
        "sensor",
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        F.date_format("window.start", "yyyy-MM-dd").alias("date"),
        "count",
        "sum",
        (F.col("sum") / F.col("count")).alias("mean"),
        "min",
        "max",
        "stddev",
        "p95",
        "anomalies",
        (F.col("anomalies") / F.col("count")).alias("anomaly_rate"),
    )


def write_batch(warehouse: Path, grain: str) -> Callable[[DataFrame, int], None]:
    """The foreachBatch sink of a grain: split per sensor / per site, upsert both tables."""
    import pyarrow.compute as pc

    per_sensor, per_site = tables(grain)

    def sink(batch: DataFrame, batch_id: int) -> None:
        rows = batch.toArrow()  # runs the batch once: the state store commits here
        is_site = pc.is_null(rows.column("sensor"))
        _warehouse.upsert(warehouse / per_sensor, rows.filter(pc.invert(is_site)), KEY, "date")
        _warehouse.upsert(
            warehouse / per_site, rows.filter(is_site).drop_columns(["sensor"]), KEY[::2], "date"
        )

    return sink


def start(spark: SparkSession, cfg: RollupConfig, grain: str) -> StreamingQuery:
    """Start one grain's query (its own checkpoint folder)."""
    readings = _source(spark, cfg)
    writer = (
        aggregate(readings, grain, cfg.watermark)
        .writeStream.queryName(grain)
        .outputMode("update")
        .option("checkpointLocation", str(cfg.checkpoint / grain))
        .foreachBatch(write_batch(cfg.warehouse, grain))
    )
    if cfg.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{cfg.interval_s} seconds")
    return writer.start()


def _source(spark: SparkSession, cfg: RollupConfig) -> DataFrame:
    if cfg.source == "manifests":
        from ._landing_source import manifest_stream

        return manifest_stream(spark, cfg.landing)
    return file_stream(spark, cfg.landing, cfg.max_files)


@dataclass
class Totals:
    """What the passes did, per grain: micro-batches, rows in, late rows dropped."""

    batches: int = 0
    rows: int = 0
    dropped: int = 0
    watermark: str = ""
    busy_ms: int = 0  # the micro-batches' own time (Spark's triggerExecution), start-up aside


def describe(progress: dict[str, Any], totals: Totals) -> str:
    """A line for one micro-batch's progress (Spark's StreamingQueryProgress as a dict)."""
    rows = int(progress.get("numInputRows", 0))
    ops = progress.get("stateOperators") or [{}]
    dropped = int(ops[0].get("numRowsDroppedByWatermark", 0))
    updated = int(ops[0].get("numRowsUpdated", 0))
    watermark = (progress.get("eventTime") or {}).get("watermark", "")
    totals.batches += 1
    totals.rows += rows
    totals.dropped += dropped
    totals.watermark = watermark
    totals.busy_ms += int((progress.get("durationMs") or {}).get("triggerExecution", 0))
    return (
        f"{progress.get('name')} batch {progress.get('batchId')}: {rows} readings rolled up, "
        f"{updated} windows updated, {dropped} late rows dropped, watermark {watermark}"
    )


def run(cfg: RollupConfig, out: Callable[[str], None] = print) -> dict[str, Totals]:
    """Run the rollup: one pass (``cfg.once``) or until interrupted; returns the totals.

    Blocks. Holds the warehouse lock throughout. Prints a line per micro-batch
    with data, and at the end of a pass the totals.
    """
    with _warehouse.lock(cfg.warehouse):
        with stoppable_start():  # Ctrl-C until its queries run: one line, no JVM left
            try:
                spark = session("headwater-rollup", cfg.master)
            except HeadwaterError:
                raise
            except Exception as e:  # the JVM did not start, or the master is not there
                raise HeadwaterError(
                    f"could not start Spark on {cfg.master or 'local[*]'}: {e}".splitlines()[0]
                ) from e
            spark.sparkContext.setLogLevel("ERROR")
            queries = [start(spark, cfg, grain) for grain in GRAINS]
        totals = {grain: Totals() for grain in GRAINS}
        done = threading.Event()
        seen: dict[str, int] = {}
        try:
            while True:
                for q in queries:
                    _report(q, seen, totals, out)
                if all(not q.isActive for q in queries):
                    break
                done.wait(0.5)
            for q in queries:
                _report(q, seen, totals, out)
                if q.exception() is not None:
                    raise HeadwaterError(f"the {q.name} rollup failed: {q.exception()}")
        finally:
            for q in queries:
                q.stop()
            spark.stop()
        for grain, t in totals.items():
            out(
                f"{grain}: {t.batches} batches, {t.rows} readings rolled up, "
                f"{t.dropped} late rows dropped, watermark {t.watermark or 'none yet'}"
            )
        return totals


def _report(
    q: StreamingQuery, seen: dict[str, int], totals: dict[str, Totals], out: Callable[[str], None]
) -> None:
    """Print the progress of the micro-batches of ``q`` not printed yet (those with rows)."""
    last = seen.get(q.name, -1)
    for p in q.recentProgress:
        progress = json.loads(p.json)
        batch = int(progress["batchId"])
        if batch <= last:
            continue
        seen[q.name] = batch
        if progress.get("numInputRows"):
            out(describe(progress, totals[q.name]))
    sys.stdout.flush()
