"""A user's Spark job: each meter's day, its energy joined with its grid events.

    headwater spark run examples/energy/daily_report.py --landing OUT/landing --warehouse WH
    headwater spark submit examples/energy/daily_report.py --schedule "every 10m"

Writes the warehouse table ``daily_meter_report``, a row per site, meter and UTC day
(``date``, the landing's partition of the readings' ``ts``): ``readings``, ``kwh`` (the
day's energy), ``v_min``, ``v_max``, ``low_readings`` (below 207 V), ``sags`` and
``recoveries`` (the day's ``grid_events``), ``first_ts`` and ``last_ts``.

Exact under re-runs and restarts: a streaming query over both datasets (its checkpoint is
the job's) only says which days have new rows; for each such day the job recomputes the
whole day's rows from the landing and upserts them by (site, meter_id) in that day's
partition, so a micro-batch run twice, or a day's rows landing across runs, write the
same rows (never a delta added twice).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.spark import JobContext

TABLE = "daily_meter_report"
DAY = ["site", "meter_id", "date"]


def run(spark: SparkSession, ctx: JobContext) -> None:
    names = ctx.landing.names()
    sources = [d for d in ("meters", "grid_events") if d in names]
    if "meters" not in sources:
        print(f"no meters landed yet in {ctx.landing.root}: nothing to report")
        return
    days = None
    for dataset in sources:
        touched = ctx.landing.stream(dataset).select("date")
        days = touched if days is None else days.unionByName(touched)
    assert days is not None

    def report_days(batch: DataFrame, _batch_id: int) -> None:
        dates = sorted(r["date"] for r in batch.select("date").distinct().collect() if r["date"])
        if dates:
            ctx.warehouse.upsert(TABLE, report(ctx, dates), key=["site", "meter_id"])

    # the sources make the query: a new source (grid_events' first rows) a new checkpoint
    writer = (
        days.writeStream.queryName("days")
        .foreachBatch(report_days)
        .option("checkpointLocation", ctx.checkpoint_for("days-" + "-".join(sources)))
    )
    ctx.trigger(writer).start().awaitTermination()


def report(ctx: JobContext, dates: list[str]) -> DataFrame:
    """The whole of each day in ``dates``: every meter's row, from all that has landed."""
    from pyspark.sql import functions as F

    meters = ctx.landing.read("meters").where(F.col("date").isin(dates))
    day = meters.groupBy(*DAY).agg(
        F.count(F.lit(1)).alias("readings"),
        F.round(F.sum("kwh"), 6).alias("kwh"),
        F.min("voltage").alias("v_min"),
        F.max("voltage").alias("v_max"),
        F.sum(F.col("low_voltage").cast("bigint")).alias("low_readings"),
        F.min("ts").alias("first_ts"),
        F.max("ts").alias("last_ts"),
    )
    if "grid_events" not in ctx.landing.names():
        events = day.select(*DAY).limit(0).withColumns({"sags": F.lit(0), "recoveries": F.lit(0)})
    else:
        events = (
            ctx.landing.read("grid_events")
            .where(F.col("date").isin(dates))
            .groupBy(*DAY)
            .agg(
                F.sum((F.col("kind") == "sag").cast("bigint")).alias("sags"),
                F.sum((F.col("kind") == "recover").cast("bigint")).alias("recoveries"),
            )
        )
    joined = day.join(events, on=DAY, how="left").fillna(0, subset=["sags", "recoveries"])
    return joined.select(
        *DAY,
        "readings",
        "kwh",
        "v_min",
        "v_max",
        "low_readings",
        F.col("sags").cast("bigint").alias("sags"),
        F.col("recoveries").cast("bigint").alias("recoveries"),
        "first_ts",
        "last_ts",
    )
