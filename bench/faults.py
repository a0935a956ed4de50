"""Faults: time to detect and to recover from each fault of the fault suite, and what was lost.

Runs ``tests/faults`` (real daemons, a real Mosquitto, real disks; as root)
``--runs`` times with ``HEADWATER_FAULT_REPORT`` set: each fault test records
the seconds from injecting its fault to the user seeing it (a health reason,
a dead letter, an exit status) and to processing going on again, and the
exact number of readings lost and duplicated (``tests/faults/_report.py``).
Prints one row per fault with the medians, and writes every run's rows to
``--out``. Lost and duplicated are asserted to be 0 by the tests themselves;
a failed test is reported and makes the command exit 1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results") / "faults.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=3, help="times the suite runs (medians of them)")
    p.add_argument("-k", dest="select", default="", help="pytest -k expression: some faults only")
    p.add_argument("--out", type=Path, default=RESULTS)


def _median(values: list[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return statistics.median(xs) if xs else None


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.1f}"


def table(rows: list[dict[str, Any]]) -> list[str]:
    """One line per fault: medians of detect and recover, readings, lost and duplicated."""
    faults: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        faults.setdefault(r["fault"], []).append(r)
    w = max([len("fault"), *(len(f) for f in faults)]) + 2
    lines = [
        f"{'fault':<{w}}{'runs':>5}{'detect s':>10}{'recover s':>11}{'readings':>10}"
        f"{'lost':>6}{'dup':>5}"
    ]
    for fault, rs in faults.items():
        lines.append(
            f"{fault:<{w}}{len(rs):>5}{_fmt(_median([r['detect_s'] for r in rs])):>10}"
            f"{_fmt(_median([r['recover_s'] for r in rs])):>11}"
            f"{sum(r['readings'] for r in rs) // len(rs):>10}"
            f"{sum(r['lost'] for r in rs):>6}{sum(r['duplicated'] for r in rs):>5}"
        )
    return lines


def run(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    failed = 0
    for i in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="hw-bench-faults-") as tmp:
            report = Path(tmp) / "report.jsonl"
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/faults"]
            if args.select:
                cmd += ["-k", args.select]
            env = {**os.environ, "HEADWATER_FAULT_REPORT": str(report)}
            print(f"run {i + 1}/{args.runs}: {' '.join(cmd[2:])}", flush=True)
            done = subprocess.run(cmd, cwd=ROOT, env=env, check=False)
            failed += done.returncode != 0
            if report.exists():
                rows += [json.loads(line) for line in report.read_text().splitlines() if line]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({"runs": args.runs, "rows": rows}, indent=1) + "\n")
    print("\n".join(table(rows)))
    print(f"(medians of {args.runs} runs; every row in {args.out})")
    if failed:
        print(f"{failed} of {args.runs} runs had a failing fault test", file=sys.stderr)
        return 1
    return 0
