"""Your own Spark job: each shop's revenue and refunds per day, from the landed ``orders``.

    headwater spark run examples/shop/revenue.py --landing OUT/landing --warehouse WH
    headwater spark submit examples/shop/revenue.py --every 10m

Writes the warehouse table ``daily_shop_revenue``, a row per shop and UTC day (``date``,
the landing's partition of the orders' ``ts``): ``orders``, ``revenue`` (the sum of the
amounts, refunded ones included), ``refunds`` (refunded orders), ``refunded`` (their
amount) and ``net`` (``revenue - refunded``), amounts as exact decimals with cents; and
``first_ts``, ``last_ts``. Every run recomputes every day from all that has landed and
upserts it by shop in each day's partition, so a run again (or on a schedule) writes the
same rows for the days that did not change. It prints a line per day and one in all.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from headwater.spark import JobContext

TABLE = "daily_shop_revenue"
COLUMNS = ("shop", "date", "orders", "revenue", "refunds", "refunded", "net", "first_ts", "last_ts")
MONEY = "decimal(18,2)"  # exact sums of cents, whatever order the rows come in


def run(spark: SparkSession, ctx: JobContext) -> None:
    from pyspark.sql import functions as F

    if "orders" not in ctx.landing.names():
        print(f"no orders landed yet in {ctx.landing.root}: nothing to do")
        return
    orders = ctx.landing.read("orders")
    amount = F.col("amount").cast(MONEY)
    refunded = F.when(F.col("refunded"), amount).otherwise(F.lit(0).cast(MONEY))
    daily = (
        orders.groupBy("shop", "date")
        .agg(
            F.count(F.lit(1)).alias("orders"),
            F.sum(amount).cast(MONEY).alias("revenue"),
            F.count(F.when(F.col("refunded"), 1)).alias("refunds"),
            F.sum(refunded).cast(MONEY).alias("refunded"),
            F.min("ts").alias("first_ts"),
            F.max("ts").alias("last_ts"),
        )
        .withColumn("net", (F.col("revenue") - F.col("refunded")).cast(MONEY))
        .select(*COLUMNS)
        .orderBy("date", "shop")
    )
    rows = daily.toArrow()  # a row per shop and day: small, so it is summed here
    ctx.warehouse.upsert(TABLE, rows, key=["shop"])
    read = sum(rows.column("orders").to_pylist())
    ctx.count(read=read)
    days: dict[str, dict[str, Any]] = {}
    for r in rows.to_pylist():
        day = days.setdefault(r["date"], {"shops": 0, "orders": 0, "refunds": 0, "net": 0})
        for k in ("orders", "refunds", "net"):
            day[k] += r[k]
        day["shops"] += 1
    for date, d in days.items():
        shops, orders, refunds = d["shops"], d["orders"], d["refunds"]
        print(f"{date}: {shops} shops, {orders} orders, {refunds} refunded, net {d['net']}")
    print(f"{TABLE}: {rows.num_rows} rows (shop, day) from {read} orders")
