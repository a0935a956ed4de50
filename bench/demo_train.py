"""Training in the demo: `headwater spark train` on the demo's default history, under load.

Lands what ``headwater demo`` has landed when it starts training: its
``HISTORY_READINGS`` readings of 6 sensors on 2 sites, a commit a second (2
readings of each sensor at the default speed-up, a Parquet file per site and
commit). Starts ``--busy N`` busy loops (a Python ``while True`` each: the load
of other work on the machine), then runs the command the demo runs, a fresh
process each time (``--runs``):

    python -m headwater spark train --landing L --out F

and times it: the process from start to exit, and each stage from its progress
lines (stderr). ``--checkout DIR`` runs another checkout's ``headwater`` (e.g. the
code before a change; its stages are then not known). Prints and writes
``bench/results/demo_train.json``. Run as ``python -m bench demo-train``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).with_name("results") / "demo_train.json"
STAGE_DONE = re.compile(r"^\[\d+/\d+\] (.+?): (?:.*?)in ([\d.]+) (s|min)")
BUSY = "while True:\n    pass\n"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--busy", type=int, default=2, help="busy loops beside it (default: 2)")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--checkout", default=None, help="the checkout whose headwater trains")
    p.add_argument("--out", default=str(RESULTS))


def run(args: argparse.Namespace) -> int:
    from headwater._demo.loop import HISTORY_READINGS
    from tests.cloud.spark.test_train import land_history

    env, cwd = dict(os.environ), Path(__file__).resolve().parents[1]
    if args.checkout:  # its folder first on sys.path (``python -m`` puts the cwd there)
        cwd = Path(args.checkout).resolve()
        env["PYTHONPATH"] = str(cwd)
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(args.busy)]
    runs: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            per_sensor = HISTORY_READINGS // 6
            landing = land_history(Path(tmp) / "landing", 2, 3, per_sensor, seqs_per_commit=2)
            files = sum(1 for _ in (landing / "readings").rglob("part-*.parquet"))
            print(f"landed {6 * per_sensor} readings in {files} files", flush=True)
            for _ in range(args.runs):
                runs.append(_one(landing, Path(tmp) / "model.json", env, cwd))
                print(json.dumps(runs[-1]), flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
    seconds = [r["seconds"] for r in runs]
    result = {
        "checkout": args.checkout or "this one",
        "cpus": os.cpu_count(),
        "busy_loops": args.busy,
        "readings": 6 * (HISTORY_READINGS // 6),
        "runs": runs,
        "seconds_median": statistics.median(seconds),
        "seconds_max": max(seconds),
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(f"median {result['seconds_median']} s, max {result['seconds_max']} s; wrote {args.out}")
    return 0


def _one(landing: Path, model: Path, env: dict[str, str], cwd: Path) -> dict[str, Any]:
    load = os.getloadavg()[0]
    began = time.monotonic()
    argv = ["spark", "train", "--landing", str(landing), "--out", str(model)]
    done = subprocess.run(
        [sys.executable, "-m", "headwater", *argv],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=1800,
        check=True,
    )
    seconds = round(time.monotonic() - began, 1)
    stages: dict[str, float] = {}
    for line in done.stderr.splitlines():
        m = STAGE_DONE.match(line)
        if m:
            stages[m[1]] = float(m[2]) * (60 if m[3] == "min" else 1)
    return {"seconds": seconds, "stages": stages, "load_average": [load, os.getloadavg()[0]]}
