"""A rollup by spec against a hand-written PySpark job doing the same aggregation, rows/s.

    python -m bench spark-spec --rows 600000 --runs 3

Lands ``--rows`` meter readings in the energy example's shape (``meters``: site,
meter_id, ts, kwh, voltage, low_voltage; 2 sites, 50 meters each, a reading a
minute) in the landing's layout (``_schema.json``, Hive partitions, manifests),
then, in one Spark session and alternating, each run on a fresh warehouse:

- **spec**: the energy example's spec (``examples/energy/rollup.toml``: hourly and
  daily, per meter and per site, eight measures) run as the platform runs it
  (``_rollup.start_all``: a streaming query per grain, ``availableNow``, state
  store, the foreachBatch sink's upserts);
- **hand**: what a user would write instead: ``spark.read.parquet``, a
  ``groupBy(window, keys)`` per grain and group with the same measures (the same
  exact decimal sums), each table upserted the same way (``_warehouse.upsert``).

Figures: rows/s over each run's wall time (the session's start left out: it is
made once, before the first run), the medians, their ratio, and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from headwater.cloud.spark import _warehouse
from headwater.cloud.spark._datasets import Landing
from headwater.cloud.spark._rollup import SUM_TYPE, RollupConfig, start_all
from headwater.cloud.spark._rollup_spec import load
from headwater.cloud.spark._session import session

SPEC = Path(__file__).resolve().parents[1] / "examples" / "energy" / "rollup.toml"
BASE_TS = 1_700_000_000_000
SITES, METERS = 2, 50


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=int, default=600_000)
    p.add_argument("--commit", type=int, default=100_000, help="rows per landing commit")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")


def land(root: Path, rows: int, commit: int) -> None:
    """``rows`` readings as commits of ``commit`` rows, as ``LandingSink`` lays them out."""
    data = root / "meters"
    (data / "_manifests").mkdir(parents=True, exist_ok=True)
    (data / "_schema.json").write_text(
        json.dumps(
            {
                "columns": {"meter_id": "string", "seq": "int64", "ts": "int64",
                            "kwh": "double", "voltage": "double", "low_voltage": "bool"},
                "partitions": ["date", "site"],
            }
        )
    )  # fmt: skip
    per_meter = rows // (SITES * METERS)
    step = max(1, commit // (SITES * METERS))
    for seq, first in enumerate(range(0, per_meter, step), start=1):
        n = min(step, per_meter - first)
        files = []
        seqs = first + np.arange(n, dtype=np.int64)
        ts = BASE_TS + seqs * 60_000
        days = (ts // 86_400_000).astype("datetime64[D]").astype(str)
        for s in range(SITES):
            cols: dict[str, list[Any]] = {
                c: [] for c in ("meter_id", "seq", "ts", "kwh", "voltage")
            }
            for m in range(METERS):
                cols["meter_id"].append(np.full(n, f"s{s}-m{m:03d}"))
                cols["seq"].append(seqs)
                cols["ts"].append(ts)
                cols["kwh"].append(np.round(0.2 + 0.1 * np.sin(seqs / 30 + m), 4))
                cols["voltage"].append(np.round(230 + 12 * np.sin(seqs / 11 + m * 0.7), 2))
            table = pa.table({c: np.concatenate(v) for c, v in cols.items()})
            table = table.append_column("low_voltage", pa.compute.less(table["voltage"], 220.0))
            day_col = np.concatenate([days] * METERS)
            for day in sorted(set(days)):
                rel = f"date={day}/site=site{s}/part-{seq:08d}-1.parquet"
                final = data / rel
                final.parent.mkdir(parents=True, exist_ok=True)
                part = table.filter(pa.array(day_col == day))
                pq.write_table(part, final.with_name("." + final.name))
                os.replace(final.with_name("." + final.name), final)
                files.append({"path": rel, "rows": part.num_rows})
        doc = {"seq": seq, "files": files, "rows": sum(f["rows"] for f in files)}
        (data / "_manifests" / f"{seq:012d}.json").write_text(json.dumps(doc))


def by_spec(spark: Any, landing: Path, warehouse: Path) -> None:
    spec = load(SPEC)
    cfg = RollupConfig(spec, landing, warehouse, warehouse / "_checkpoints", once=True)
    for q in start_all(spark, cfg, Landing(landing).layout(spec.dataset)):
        q.awaitTermination()


def by_hand(spark: Any, landing: Path, warehouse: Path) -> None:
    """The same tables, written as a user would without the platform's spec."""
    from pyspark.sql import functions as F

    path = str(landing / "meters")
    rows = spark.read.option("basePath", path).parquet(path)
    rows = rows.withColumn("t", F.timestamp_millis("ts")).cache()
    for grain, length in (("hourly", "1 hour"), ("daily", "1 day")):
        for group, keys in (("meter", ["site", "meter_id"]), ("site", ["site"])):
            kwh = F.sum(F.col("kwh").cast(SUM_TYPE)).cast("double")
            agg = rows.groupBy(F.window("t", length), *keys).agg(
                F.count(F.lit(1)).alias("readings"),
                kwh.alias("kwh"),
                (kwh / F.count("kwh")).alias("kwh_mean"),
                F.min("voltage").alias("v_min"),
                F.max("voltage").alias("v_max"),
                F.stddev_samp("voltage").alias("v_std"),
                F.percentile_approx("voltage", 0.05).alias("v_p05"),
                F.count(F.when(F.col("low_voltage"), 1)).alias("low"),
            )
            out = agg.select(
                *keys,
                F.col("window.start").alias("window_start"),
                F.col("window.end").alias("window_end"),
                F.date_format("window.start", "yyyy-MM-dd").alias("date"),
                "readings", "kwh", "kwh_mean", "v_min", "v_max", "v_std", "v_p05", "low",
            )  # fmt: skip
            _warehouse.upsert(
                warehouse / f"{grain}_{group}", out.toArrow(), (*keys, "window_start"), "date"
            )
    rows.unpersist()


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="bench-spec-"))
    try:
        land(tmp / "landing", args.rows, args.commit)
        landed = args.rows // (SITES * METERS) * SITES * METERS
        spark = session("bench-spark-spec", None)
        spark.sparkContext.setLogLevel("ERROR")
        figures: dict[str, list[float]] = {"spec": [], "hand": []}
        loads = []
        for i in range(args.runs):
            for name, fn in (("spec", by_spec), ("hand", by_hand)):
                wh = tmp / f"wh-{name}-{i}"
                loads.append(round(os.getloadavg()[0], 2))
                t0 = time.monotonic()
                fn(spark, tmp / "landing", wh)
                wall = time.monotonic() - t0
                figures[name].append(round(landed / wall))
                rows = _warehouse.read_table(wh / "daily_site").num_rows
                line = f"run {i + 1} {name}: {landed} rows in {wall:.1f} s, "
                print(f"{line}{landed / wall:,.0f} rows/s ({rows} daily site rows)", flush=True)
                shutil.rmtree(wh)
        spark.stop()
        med = {k: statistics.median(v) for k, v in figures.items()}
        summary = {
            "rows": landed,
            "median_rows_per_s": med,
            "spec_over_hand": round(med["spec"] / med["hand"], 3),
            "runs": figures,
            "load_average_at_each_start": loads,
            "cpus": os.cpu_count(),
        }
        print(json.dumps({k: v for k, v in summary.items() if k != "runs"}))
        if args.out:
            Path(args.out).write_text(json.dumps(summary, indent=2) + "\n")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
