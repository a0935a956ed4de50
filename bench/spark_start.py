"""Spark's start-up: a process to its first query's answer, with and without a class archive.

Each run is a fresh process that makes the session the platform makes for a small job
(``session(app, "local[1]", SMALL_JOB)``), runs one aggregate over 1,000 rows and prints
the driver JVM's CPU time then (``psutil`` on the gateway's process) and the wall time from
the process's start to the answer. The runs alternate, mapped and not
(``HEADWATER_SPARK_CLASS_ARCHIVE=off``), so that both see the same machine; before them
``headwater spark prepare`` writes the archive (into a cache folder of the bench's own,
``XDG_CACHE_HOME``), timed to its exit. Prints medians and writes
``bench/results/spark_start.json``. Run as ``python -m bench spark-start``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results") / "spark_start.json"
ONE = """
import json, time, psutil
t0 = psutil.Process().create_time()
from headwater.cloud.spark._session import SMALL_JOB, end_jvm, session
from pyspark import SparkContext
s = session("bench-start", "local[1]", dict(SMALL_JOB))
n = s.sql("SELECT k, count(*) AS n FROM (SELECT id % 7 AS k FROM range(1000)) GROUP BY k").count()
wall = time.time() - t0
cpu = psutil.Process(SparkContext._gateway.proc.pid).cpu_times()
options = " ".join(psutil.Process(SparkContext._gateway.proc.pid).cmdline())
print(json.dumps({"groups": n, "wall_s": wall, "jvm_cpu_s": cpu.user + cpu.system,
                  "mapped": "SharedArchiveFile" in options}))
end_jvm()
"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=5, help="runs of each, alternating")
    p.add_argument("--out", default=str(RESULTS))


def _one(env: dict[str, str]) -> dict[str, Any]:
    t = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", ONE],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise SystemExit(f"a run failed:\n{done.stderr[-3000:]}")
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    row["exit_s"] = time.monotonic() - t  # to the process's exit: the archive written, if so
    row["load"] = os.getloadavg()[0]
    return row


def _median(rows: list[dict[str, Any]], key: str) -> float:
    return round(float(statistics.median(r[key] for r in rows)), 2)


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache}
        env.pop("HEADWATER_SPARK_CLASS_ARCHIVE", None)
        t = time.monotonic()
        prepare = [sys.executable, "-m", "headwater", "spark", "prepare"]
        said = subprocess.run(prepare, check=True, env=env, capture_output=True, text=True)
        first = {"prepare_s": time.monotonic() - t, "said": said.stdout.strip()}
        print(f"headwater spark prepare: {first}", flush=True)
        off = {**env, "HEADWATER_SPARK_CLASS_ARCHIVE": "off"}
        mapped: list[dict[str, Any]] = []
        plain: list[dict[str, Any]] = []
        for i in range(args.runs):
            mapped.append(_one(env))
            plain.append(_one(off))
            print(f"run {i + 1}: mapped {mapped[-1]}\n       plain {plain[-1]}", flush=True)
        archive = sum(f.stat().st_size for f in Path(cache, "headwater").glob("*.jsa"))
    assert all(r["mapped"] for r in mapped) and not any(r["mapped"] for r in plain)
    summary = {
        key: {
            "mapped": _median(mapped, key),
            "plain": _median(plain, key),
            "ratio": round(_median(mapped, key) / _median(plain, key), 2),
        }
        for key in ("wall_s", "jvm_cpu_s", "exit_s")
    }
    doc = {
        "prepare": first,
        "mapped": mapped,
        "plain": plain,
        "median": summary,
        "archive_bytes": archive,
        "cores": os.cpu_count(),
    }
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    print(json.dumps(summary, indent=1))
    return 0
