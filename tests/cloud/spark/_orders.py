"""A landed ``orders`` dataset of the tests' own (``shop, amount, ts``), written by the real
``LandingSink`` (driven as its topology's task would drive it: rows, then a checkpoint's seal
and commit), and the Spark job files the driver's tests run over it.

``columns`` may grow (``coupon``, a nullable string): the sink then rewrites the dataset's
``_schema.json``, as a topology whose stream gained a field does.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

from headwater import Topology
from headwater.common.api import Spout, Tuple, shuffle
from headwater.connectors import LandingSink
from headwater.testing import TestContext

DAY = 86_400_000
T0 = 1_764_288_000_000  # 2025-11-28T00:00:00Z
COLUMNS = ("shop", "amount", "ts")


class _Source(Spout):
    def next_tuple(self) -> None:
        pass


class Orders:
    """Lands orders under ``root/orders``, one commit per ``land`` call; keeps what it landed."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.checkpoint = 0
        self.landed: list[dict[str, Any]] = []

    def land(self, rows: list[dict[str, Any]], columns: tuple[str, ...] = COLUMNS) -> None:
        topology = (
            Topology("orders")
            .add_spout("src", _Source, outputs=columns)
            .add_bolt(
                "sink",
                lambda: LandingSink(self.root, "orders", event_time="ts"),
                inputs={"src": shuffle()},
            )
        )
        sink = LandingSink(self.root, "orders", event_time="ts")
        sink.open(TestContext(topology, "sink"))
        sink.on_restore(self.checkpoint)
        for r in rows:
            sink.process(Tuple(None, "src", "default", 1, [r.get(c) for c in columns], 0))
        self.checkpoint += 1
        sink.on_checkpoint(self.checkpoint)
        sink.on_commit(self.checkpoint)
        self.landed.extend(rows)


def orders(start: int, count: int, coupon: bool = False) -> list[dict[str, Any]]:
    """``count`` orders from number ``start``: three shops, two days, amounts in quarters
    (exact in binary: their sums are too, in any order)."""
    rows = []
    for i in range(start, start + count):
        row: dict[str, Any] = {
            "shop": f"shop{i % 3}",
            "amount": (i % 7) * 0.25 + 1.0,
            "ts": T0 + (i % 2) * DAY + i * 1000,
        }
        if coupon:
            row["coupon"] = f"c{i % 2}"
        rows.append(row)
    return rows


def day(ts: int) -> str:
    return "2025-11-28" if ts < T0 + DAY else "2025-11-29"


def totals(rows: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, int]]:
    """(date, shop) -> (sum of amount, orders): what the jobs must write."""
    out: dict[tuple[str, str], list[Any]] = defaultdict(lambda: [0.0, 0])
    for r in rows:
        entry = out[(day(r["ts"]), r["shop"])]
        entry[0] += r["amount"]
        entry[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(out.items())}


def coupons(rows: list[dict[str, Any]]) -> dict[tuple[str, str], int]:
    """(date, coupon) -> orders with that coupon."""
    out: dict[tuple[str, str], int] = defaultdict(int)
    for r in rows:
        if r.get("coupon") is not None:
            out[(day(r["ts"]), r["coupon"])] += 1
    return dict(sorted(out.items()))


def table(warehouse: Path, name: str, value: tuple[str, ...]) -> dict[tuple[str, str], Any]:
    """A warehouse table as (date, key) -> its ``value`` columns (one: the value itself)."""
    import pyarrow.parquet as pq

    out: dict[tuple[str, str], Any] = {}
    for f in sorted((warehouse / name).glob("date=*/data.parquet")):
        date = f.parent.name.split("=", 1)[1]
        for r in pq.read_table(f).to_pylist():
            key = next(r[k] for k in ("shop", "coupon") if k in r)
            vals = tuple(r[v] for v in value)
            out[(date, key)] = vals[0] if len(vals) == 1 else vals
    return dict(sorted(out.items()))


ONCE_JOB = """
from pyspark.sql import functions as F


def run(spark, ctx):
    orders = ctx.landing.read("orders")
    sums = orders.groupBy("date", "shop").agg(
        F.sum("amount").alias("total"), F.count(F.lit(1)).alias("orders")
    )
    ctx.warehouse.upsert(ctx.params["table"], sums, key=["shop"])
    ctx.count(read=orders.count())
"""

RAISING_JOB = """
def run(spark, ctx):
    ctx.landing.read("orders").count()
    raise ValueError("no shop named " + ctx.params.get("shop", "?"))
"""

SINK_FAILS_JOB = """
def run(spark, ctx):
    def sink(batch, batch_id):
        raise KeyError("no shop " + str(batch.count()))

    writer = ctx.landing.stream("orders").writeStream.queryName("failing")
    writer = writer.option("checkpointLocation", ctx.checkpoint_for("failing"))
    ctx.trigger(writer.foreachBatch(sink)).start()
"""

CONTINUOUS_JOB = """
from pyspark.sql import functions as F


def run(spark, ctx):
    orders = ctx.landing.stream("orders", max_files=4)
    sums = orders.groupBy("date", "shop").agg(
        F.sum("amount").alias("total"), F.count(F.lit(1)).alias("orders")
    )
    ctx.trigger(
        sums.writeStream.queryName("sums")
        .outputMode("update")
        .option("checkpointLocation", ctx.checkpoint_for("sums"))
        .foreachBatch(ctx.warehouse.sink("shop_totals", ["shop"]))
    ).start()
    if "coupon" in orders.columns:  # the landing grew it: the driver ran the job again
        counts = orders.where("coupon IS NOT NULL").groupBy("date", "coupon").count()
        ctx.trigger(
            counts.writeStream.queryName("coupons")
            .outputMode("update")
            .option("checkpointLocation", ctx.checkpoint_for("coupons"))
            .foreachBatch(ctx.warehouse.sink("coupon_counts", ["coupon"]))
        ).start()
"""
