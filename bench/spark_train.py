"""Spark MLlib training: time of a `headwater spark train` run and its artifact's size.

Lands the IoT example's readings (``--sites`` x ``--per-site`` sensors,
``--counts`` readings each, flagged by the hand-set detector) in the landing
zone layout, then times the example's ``train`` (``examples/iot/anomaly_train.py``, on
the dataset read with ``headwater.spark.Landing``) in one local Spark session
(``--spark-master``, default ``local[*]``): the session's start once, then each size ``--runs``
times (the first run of a JVM is the slowest: code not yet compiled). Prints and
writes ``bench/results/spark_train.json``: per size, the training seconds (each
run and their median), the artifact's bytes and its figures. Run as ``python -m bench spark-train``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results") / "spark_train.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--sites", type=int, default=2)
    p.add_argument("--per-site", type=int, default=3)
    p.add_argument("--counts", default="1000,10000", help="readings per sensor, per size")
    p.add_argument("--runs", type=int, default=2, help="training runs per size")
    p.add_argument("--spark-master", default=None)
    p.add_argument("--out", default=str(RESULTS))


def run(args: argparse.Namespace) -> int:
    from headwater.cloud.spark import session
    from headwater.common.models import dump_model
    from headwater.spark import Landing
    from tests._iot import anomaly_train  # the example's training, as the command loads it
    from tests.cloud.spark.test_train import land_history  # the tests' landing of the example

    started = time.monotonic()
    spark = session("headwater-bench-train", args.spark_master)
    spark.sparkContext.setLogLevel("ERROR")
    startup = time.monotonic() - started
    print(f"spark session: {startup:.1f} s", flush=True)
    sizes: list[dict[str, Any]] = []
    try:
        for count in (int(c) for c in args.counts.split(",")):
            with tempfile.TemporaryDirectory() as tmp:
                landing = land_history(Path(tmp), args.sites, args.per_site, count)
                seconds = []
                for _ in range(args.runs):
                    t = time.monotonic()
                    readings = Landing(landing).read(spark, anomaly_train.DATASET)
                    doc = anomaly_train.train(spark, readings)
                    seconds.append(round(time.monotonic() - t, 2))
                data = dump_model(doc)
                ev = doc["evaluation"]
                row = {
                    "sensors": args.sites * args.per_site,
                    "readings": args.sites * args.per_site * count,
                    "train_seconds": seconds,
                    "train_seconds_median": statistics.median(seconds),
                    "artifact_bytes": len(data),
                    "model": {k: ev["model"][k] for k in ("precision", "recall", "f1")},
                    "handset": {k: ev["handset"][k] for k in ("precision", "recall", "f1")},
                    "load_average": os.getloadavg()[0],
                }
                sizes.append(row)
                print(json.dumps(row), flush=True)
    finally:
        spark.stop()
    result = {
        "spark_master": args.spark_master or "local[*]",
        "cpus": os.cpu_count(),
        "session_seconds": round(startup, 2),
        "sizes": sizes,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_arguments(p)
    return run(p.parse_args())


if __name__ == "__main__":
    raise SystemExit(main())
