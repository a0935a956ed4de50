"""A user's continuous Spark job for ``bench/spark_latency.py --via job``: the readings counted
per site and window, hourly and daily, upserted into ``hourly_site`` and ``daily_site``."""

from __future__ import annotations

from typing import Any


def run(spark: Any, ctx: Any) -> None:
    from pyspark.sql import functions as F

    rows = ctx.landing.stream(ctx.params.get("dataset", "readings"))
    timed = rows.withColumn("t", F.timestamp_millis("ts")).withWatermark("t", "1 hour")
    for grain, length in (("hourly", "1 hour"), ("daily", "1 day")):
        counts = (
            timed.groupBy(F.window("t", length), "site")
            .agg(F.count(F.lit(1)).alias("count"))
            .select(
                "site",
                F.col("window.start").alias("window_start"),
                F.date_format("window.start", "yyyy-MM-dd").alias("date"),
                "count",
            )
        )
        writer = (
            counts.writeStream.queryName(grain)
            .outputMode("update")
            .option("checkpointLocation", ctx.checkpoint_for(grain))
            .foreachBatch(ctx.warehouse.sink(f"{grain}_site", key=["site", "window_start"]))
        )
        ctx.trigger(writer).start()
