"""Landing-to-rollup latency: a landing commit to the warehouse tables showing its rows.

    python -m bench spark-latency --commits 20 --intervals default,1 [--via rollup,job]

For each ``--interval`` (``default``: the command's own, 5 s) a fresh landing
zone and warehouse, and ``headwater spark rollup --continuous`` started as its
own process (``python -m headwater spark rollup --landing L --warehouse W
--continuous [--interval S]``), exactly as a user runs it. A seed commit is
landed first and waited for (the JVM's start is not part of the figure). Then
``--commits`` times: wait a random fraction of the interval (so a commit falls
anywhere in the trigger's cycle), land a commit of ``--rows`` readings as the
landing zone's contract says (files renamed into place, then the manifest, whose
``committed_at`` starts the clock), and poll the warehouse every ``--poll``
seconds until ``hourly_site`` and ``daily_site`` count every row landed so far
(the sum of ``count`` over all windows). ``--via job`` runs a user's continuous Spark
job instead (``bench/jobs/site_counts.py``: the same counts per site), by its driver as a
worker runs a submitted one (``python -m headwater.cloud.spark.driver --job FILE
--continuous [--interval S]``). Latency = the time a table first shows
the rows - the manifest's ``committed_at``. Figures per interval: median and p95
of each table's latency. Writes ``bench/results/spark_latency.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds

from bench.spark_rollup import IOT_SPEC, SENSORS, land_commit

RESULTS = Path(__file__).with_name("results") / "spark_latency.json"
JOB = Path(__file__).with_name("jobs") / "site_counts.py"
DEFAULT_INTERVAL_S = 5.0  # headwater spark rollup --interval's default
TABLES = ("hourly_site", "daily_site")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--commits", type=int, default=20, help="measured commits per interval")
    p.add_argument(
        "--intervals", default="default,1", help="--interval values; 'default': left out"
    )
    p.add_argument("--rows", type=int, default=600, help="readings per commit")
    p.add_argument("--poll", type=float, default=0.05, help="seconds between warehouse reads")
    p.add_argument(
        "--via", default="rollup", help="rollup (the command), job (a user's job's driver), or both"
    )
    p.add_argument("--out", default=str(RESULTS))


def counted(warehouse: Path, table: str) -> int:
    """Rows the table's windows count so far (0 before its first file)."""
    path = warehouse / table
    if not path.is_dir():
        return 0
    t = ds.dataset(path, format="parquet", partitioning="hive").to_table(columns=["count"])
    return int(sum(t.column("count").to_pylist()))


def p95(xs: list[float]) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, round(0.95 * (len(s) - 1)))]


def measure(tmp: Path, interval: str, args: argparse.Namespace, via: str) -> dict[str, Any]:
    landing, warehouse = tmp / f"landing-{via}-{interval}", tmp / f"wh-{via}-{interval}"
    if via == "job":
        cmd = [sys.executable, "-m", "headwater.cloud.spark.driver", "--job", str(JOB)]
        cmd += ["--name", "site-counts", "--landing", str(landing), "--warehouse", str(warehouse)]
        cmd += ["--checkpoint", str(warehouse / "_checkpoints"), "--workdir", str(tmp / via)]
        cmd += ["--continuous"]
    else:
        cmd = [sys.executable, "-m", "headwater", "spark", "rollup", "--landing", str(landing)]
        cmd += ["--warehouse", str(warehouse), "--continuous", "--spec", str(IOT_SPEC)]
    if interval != "default":
        cmd += ["--interval", interval]
    period = DEFAULT_INTERVAL_S if interval == "default" else float(interval)
    per_sensor = args.rows // len(SENSORS)
    land_commit(landing, 1, 0, per_sensor)
    total = per_sensor * len(SENSORS)
    log = open(tmp / f"rollup-{interval}.log", "wb")  # noqa: SIM115 (closed below)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    lat: dict[str, list[float]] = {t: [] for t in TABLES}
    loads: list[float] = []
    try:
        started = time.monotonic()
        while any(counted(warehouse, t) < total for t in TABLES):
            if proc.poll() is not None or time.monotonic() - started > 600:
                raise RuntimeError(f"the rollup did not start; see {log.name}")
            time.sleep(0.2)
        startup = time.monotonic() - started
        print(f"interval {interval}: the seed commit rolled up {startup:.1f} s after start")
        for seq in range(2, args.commits + 2):
            time.sleep(random.uniform(0, period))
            doc = land_commit(landing, seq, (seq - 1) * per_sensor, per_sensor)
            total += doc["rows"]
            pending = set(TABLES)
            deadline = time.monotonic() + 120
            while pending:
                now = time.time()
                for t in sorted(pending):
                    if counted(warehouse, t) >= total:
                        lat[t].append(now - doc["committed_at"])
                        pending.discard(t)
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"commit {seq} not rolled up; see {log.name}")
                time.sleep(args.poll)
            loads.append(os.getloadavg()[0])
            print(
                f"  commit {seq}: " + ", ".join(f"{t} {lat[t][-1]:.2f} s" for t in TABLES),
                flush=True,
            )
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
    return {
        "via": via,
        "command": shlex.join(["python", *cmd[1:]]).replace(str(tmp), "$TMP"),
        "interval_s": period,
        "commit_rows": args.rows,
        "startup_to_seed_rolled_up_s": round(startup, 2),
        "latency_s": {
            t: {
                "median": round(statistics.median(v), 3),
                "p95": round(p95(v), 3),
                "min": round(min(v), 3),
                "max": round(max(v), 3),
                "each": [round(x, 3) for x in v],
            }
            for t, v in lat.items()
        },
        "load_average": {
            "median": round(statistics.median(loads), 2),
            "max": round(max(loads), 2),
        },
    }


def run(args: argparse.Namespace) -> int:
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-latency-") as tmp:
        for via, interval in itertools.product(args.via.split(","), args.intervals.split(",")):
            row = measure(Path(tmp), interval, args, via)
            results.append(row)
            print(json.dumps({k: v for k, v in row.items() if k != "latency_s"}))
            for t, f in row["latency_s"].items():
                print(f"  {t}: median {f['median']} s, p95 {f['p95']} s")
    doc = {"cpus": os.cpu_count(), "commits": args.commits, "poll_s": args.poll, "runs": results}
    Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0
