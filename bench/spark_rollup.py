"""Rollup throughput in local mode, rows/s: Spark's file source and the manifest data source.

    python -m bench spark-rollup --rows 1000000 --runs 3 [--sources files,manifests]

Lands ``--rows`` readings (6 sensors on 2 sites, a reading a second each) in the
landing zone's layout, in commits of ``--commit`` rows, then runs ``headwater
spark rollup --once`` in this process over them, alternating the sources,
each run on a fresh warehouse and checkpoint. Figures per source: the median
rows/s over the micro-batches' own time (Spark's ``triggerExecution``, the
session's start left out) and over the whole pass (session start included).
``--cli-runs N`` then times N passes, each a fresh ``python -m headwater spark
rollup --once`` process as a user runs it (the JVM's start included; the runs
above share one JVM, so only the first of them pays for it).
``--out`` (e.g. ``bench/results/spark_rollup.json``) keeps each run's figures.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from headwater.cloud.spark import _rollup
from headwater.cloud.spark._rollup import RollupConfig
from headwater.cloud.spark._rollup_spec import load
from headwater.common._exceptions import HeadwaterError

IOT_SPEC = Path(__file__).resolve().parents[1] / "examples" / "iot" / "rollup.toml"
BASE_TS = 1_700_000_000_000
SENSORS = [(f"site{s}", f"s{s}-{k}") for s in range(2) for k in range(3)]


def land(root: Path, rows: int, commit: int) -> None:
    """``rows`` readings as commits of ``commit`` rows: files by (date, site), then a manifest."""
    per_sensor = rows // len(SENSORS)
    step = commit // len(SENSORS)
    for seq, first in enumerate(range(0, per_sensor, step), start=1):
        land_commit(root, seq, first, min(step, per_sensor - first))


def land_commit(root: Path, seq: int, first: int, n: int) -> dict[str, Any]:
    """Commit ``seq`` of the landing zone's contract: readings ``first..first+n-1`` of each
    sensor (one a second), each file written under a hidden name and renamed into place,
    then the manifest, made the same way; returns the manifest."""
    data = root / "readings"
    (data / "_manifests").mkdir(parents=True, exist_ok=True)
    files = []
    ts = BASE_TS + (first + np.arange(n, dtype=np.int64)) * 1000
    days = (ts // 86_400_000).astype("datetime64[D]").astype(str)
    for s, site in enumerate(("site0", "site1")):
        cols: dict[str, list[Any]] = {c: [] for c in ("sensor", "seq", "ts", "value")}
        for k in range(3):
            seqs = first + np.arange(n, dtype=np.int64)
            cols["sensor"].append(np.full(n, f"s{s}-{k}"))
            cols["seq"].append(seqs)
            cols["ts"].append(ts)
            cols["value"].append(np.round(18 + 4 * s + 5 * np.sin(seqs / 7 + k), 3))
        table = pa.table({c: np.concatenate(v) for c, v in cols.items()})
        table = table.append_column("smoothed", table["value"])
        table = table.append_column("anomaly", pa.array(np.concatenate(cols["seq"]) % 37 == 11))
        table = table.append_column("model", pa.array([""] * table.num_rows))
        day_col = np.concatenate([days] * 3)
        for day in sorted(set(days)):
            rel = f"date={day}/site={site}/part-{seq:08d}-1.parquet"
            final = data / rel
            final.parent.mkdir(parents=True, exist_ok=True)
            part = table.filter(pa.array(day_col == day))
            tmp = final.with_name("." + final.name)
            pq.write_table(part, tmp)
            os.replace(tmp, final)
            files.append({"path": rel, "rows": part.num_rows})
    doc = {
        "seq": seq,
        "checkpoint": seq,
        "task": 1,
        "files": files,
        "rows": sum(f["rows"] for f in files),
        "event_time": {"min": int(ts[0]), "max": int(ts[-1])},
        "committed_at": time.time(),
    }
    manifest = data / "_manifests" / f"{seq:012d}.json"
    tmp = manifest.with_name("." + manifest.name)
    tmp.write_text(json.dumps(doc))
    os.replace(tmp, manifest)
    return doc


def rows_landed(root: Path) -> int:
    """The rows the landing's manifests count."""
    return sum(
        json.loads(m.read_text())["rows"] for m in (root / "readings" / "_manifests").glob("*.json")
    )


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--commit", type=int, default=60_000, help="rows per landing commit")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument(
        "--sources", default="files,manifests", help="the rollup's sources to measure, in turn"
    )
    p.add_argument(
        "--cli-runs",
        type=int,
        default=0,
        help="then as many passes, each a fresh `python -m headwater spark rollup --once` "
        "process (Python, the JVM and Spark started each time), timed whole",
    )
    p.add_argument("--out", type=Path, default=None, help="write the figures as JSON here")


def cli_pass(landing: Path, warehouse: Path) -> tuple[list[str], float]:
    """One ``headwater spark rollup --once`` as its own process: the command and its seconds."""
    cmd = [sys.executable, "-m", "headwater", "spark", "rollup", "--landing", str(landing)]
    cmd += ["--warehouse", str(warehouse), "--once", "--watermark", "1 hour"]
    cmd += ["--spec", str(IOT_SPEC)]
    t0 = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return cmd, time.monotonic() - t0


def run(args: argparse.Namespace) -> int:
    sources = args.sources.split(",")
    tmp = Path(tempfile.mkdtemp(prefix="bench-rollup-"))
    try:
        land(tmp / "landing", args.rows, args.commit)
        figures: dict[str, dict[str, list[float]]] = {}
        failures: list[str] = []
        loads: list[float] = []
        for i in range(args.runs):
            for source in sources:
                wh = tmp / f"wh-{source}-{i}"
                cfg = RollupConfig(
                    dataclasses.replace(load(IOT_SPEC), watermark="1 hour"),
                    tmp / "landing",
                    wh,
                    wh / "_checkpoints",
                    once=True,
                    source=source,
                )
                loads.append(os.getloadavg()[0])
                t0 = time.monotonic()
                try:
                    totals = _rollup.run(cfg, out=lambda line: None)
                except HeadwaterError as e:  # e.g. a Python worker that never connected back
                    print(f"run {i + 1} {source}: failed: {e}")
                    failures.append(f"run {i + 1} {source}: {e}")
                    continue
                wall = time.monotonic() - t0
                rows = totals["hourly"].rows
                busy = max(t.busy_ms for t in totals.values()) / 1000
                f = figures.setdefault(source, {"rows_per_s": [], "pass_rows_per_s": []})
                f["rows_per_s"].append(rows / busy)
                f["pass_rows_per_s"].append(rows / wall)
                print(
                    f"run {i + 1} {source}: {rows} rows, batches {busy:.1f} s, pass {wall:.1f} s",
                    flush=True,
                )
                shutil.rmtree(wh)
        cli: dict[str, Any] = {"seconds": [], "load_average_at_each_start": []}
        for i in range(args.cli_runs):
            cli["load_average_at_each_start"].append(round(os.getloadavg()[0], 2))
            cmd, seconds = cli_pass(tmp / "landing", tmp / f"wh-cli-{i}")
            cli["seconds"].append(round(seconds, 2))
            shutil.rmtree(tmp / f"wh-cli-{i}")
            print(f"cli run {i + 1}: {seconds:.1f} s, {args.rows / seconds:.0f} rows/s", flush=True)
            cli["command"] = shlex.join(["python", *cmd[1:]]).replace(str(tmp), "$TMP")
        if cli["seconds"]:
            cli["rows_per_s"] = round(
                rows_landed(tmp / "landing") / statistics.median(cli["seconds"])
            )
        summary = {
            s: {k: round(statistics.median(v)) for k, v in f.items()} | {"runs": f}
            for s, f in figures.items()
        }
        print(
            json.dumps({s: {k: v for k, v in f.items() if k != "runs"} for s, f in summary.items()})
        )
        if args.out:
            doc = {
                "rows": args.rows,
                "commit_rows": args.commit,
                "cpus": os.cpu_count(),
                "load_average_at_each_start": [round(x, 2) for x in loads],
                "figures": summary,
                "cli_passes": cli,
                "failures": failures,
            }
            Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")
            print(f"wrote {args.out}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__)
    add_arguments(p)
    run(p.parse_args())


if __name__ == "__main__":
    main()
