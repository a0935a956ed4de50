"""Start-up: `headwater run` of the word count example to its first tuple processed.

Each run starts ``python -m headwater run bench/startup_topology.py --containers N`` (the
example ``examples/iot/wordcount.py`` unchanged, whose ``count`` bolt also writes the time it
processed its first word) as a real subprocess, and measures from just before the command
starts to:

``first tuple``   the first word processed by a ``count`` task (the end of the pipeline);
``API``           the topology master's metrics showing ``count`` executed > 0 (what
                  ``headwater status`` sees: instances report every second, so this lags);

and the phases in between, from the processes' own log lines (so the same on every
revision): the topology master listening (``tmaster.log``), every container's stream
manager listening (``container-N.log``), every container registered at the master, every
instance connected to its stream manager, the ``running ...`` line the command prints once
its start-up returns. ``CPU s`` is the user + system CPU time of the command's whole
process tree at the first tuple: on a shared, loaded machine wall time stretches, CPU time
much less. The 1-minute load average is recorded before each run.

``--code LABEL=DIR`` (repeatable) runs the command with ``PYTHONPATH=DIR``: a checkout of
another revision, for a before and after in one run, interleaved within each repetition so
that the machine's noise spreads over all of them. No speed is asserted: this only measures.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from datetime import datetime
from pathlib import Path
from typing import Any

import psutil

from bench.startup_topology import FIRST_TUPLE_ENV

ROOT = Path(__file__).resolve().parent.parent
TOPOLOGY_FILE = Path(__file__).with_name("startup_topology.py")
DEFAULT_OUT = Path(__file__).parent / "results" / "startup.json"
PHASES = ("tmaster", "stmgrs", "registered", "instances", "returned", "first", "api")
PHASE_NAMES = {
    "tmaster": "master up",
    "stmgrs": "stmgrs up",
    "registered": "registered",
    "instances": "instances",
    "returned": "run line",
    "first": "first tuple",
    "api": "API",
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=5, help="repetitions (medians over them)")
    p.add_argument("--containers", type=int, default=2)
    p.add_argument(
        "--code",
        action="append",
        default=[],
        metavar="LABEL=DIR",
        help="run the command with PYTHONPATH=DIR (repeatable; default: this checkout)",
    )
    p.add_argument("--timeout", type=float, default=60.0, help="seconds before a run fails")
    p.add_argument("--out", type=Path, default=DEFAULT_OUT, help="JSON results file")


def _log_time(line: str) -> float | None:
    try:  # logging's asctime: "2026-11-29 07:08:57,616", local time
        return datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp()
    except ValueError:
        return None


def _first(path: Path, needle: str) -> list[float]:
    """The times of the log lines of ``path`` that contain ``needle``."""
    if not path.exists():
        return []
    out = []
    for line in path.read_text(errors="replace").splitlines():
        if needle in line and (t := _log_time(line)) is not None:
            out.append(t)
    return out


def _phases_from_logs(workdir: Path, containers: int) -> dict[str, float | None]:
    tmaster = workdir / "tmaster.log"
    ready = _first(tmaster, "topology master for")
    registered = _first(tmaster, "registered at")
    stmgrs = [
        t for c in range(containers) for t in _first(workdir / f"container-{c}.log", "stmgr at")
    ]
    connected = [
        t for c in range(containers) for t in _first(workdir / f"container-{c}.log", ") connected")
    ]
    return {
        "tmaster": min(ready) if ready else None,
        "stmgrs": max(stmgrs) if len(stmgrs) >= containers else None,
        "registered": max(registered) if len(registered) >= containers else None,
        "instances": max(connected) if connected else None,
    }


def _tree_cpu(pid: int) -> float:
    try:
        root = psutil.Process(pid)
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return float("nan")
    total = 0.0
    for p in procs:
        try:
            t = p.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def _api_executed(state: Path) -> float:
    """``count``'s executed at the master's API, 0 while the run's record is not there."""
    try:
        record = json.loads((state / "wordcount.json").read_text())
        token = Path(record["token_file"]).read_text().strip()
        url = f"{record['http']}/api/v1/topologies/wordcount/metrics"
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(req, timeout=2) as resp:
            return float(json.loads(resp.read())["components"]["count"]["executed"])
    except (OSError, ValueError, KeyError):
        return 0.0


def one_run(code: str, containers: int, timeout: float) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="hw-su-"))
    state, workdir, first = tmp / "state", tmp / "wd", tmp / "first"
    env = dict(os.environ)
    env.update(PYTHONPATH=code, HEADWATER_STATE_DIR=str(state), **{FIRST_TUPLE_ENV: str(first)})
    load = os.getloadavg()[0]
    returned: list[float] = []
    t0 = time.time()
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "headwater", "run", str(TOPOLOGY_FILE)),
            *("--containers", str(containers), "--workdir", str(workdir), "--quiet"),
            *("--duration", str(timeout)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=tmp,
    )
    out: list[str] = []

    def read() -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.decode(errors="replace")
            out.append(line)
            if line.startswith("running ") and not returned:
                returned.append(time.time())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    t_first = t_api = None
    cpu = float("nan")
    deadline = t0 + timeout
    try:
        while time.time() < deadline and proc.poll() is None:
            if t_first is None and first.exists() and first.read_text().strip():
                cpu = _tree_cpu(proc.pid)
                t_first = float(first.read_text())
            if t_first is not None and _api_executed(state) > 0:
                t_api = time.time()
                break
            time.sleep(0.005 if t_first is None else 0.02)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(5)
    marks: dict[str, float | None] = dict(_phases_from_logs(workdir, containers))
    marks.update(returned=returned[0] if returned else None, first=t_first, api=t_api)
    row: dict[str, Any] = {
        "load_1m": round(load, 2),
        "cpu_s": round(cpu, 2),
        **{k: None if v is None else round(v - t0, 3) for k, v in marks.items()},
    }
    if t_first is None:
        row["output"] = "".join(out)[-2000:]
    shutil.rmtree(tmp, ignore_errors=True)
    return row


def _median(rows: list[dict[str, Any]], key: str) -> float | None:
    xs = [r[key] for r in rows if r.get(key) is not None and r[key] == r[key]]
    return statistics.median(xs) if xs else None


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def table(results: dict[str, list[dict[str, Any]]]) -> list[str]:
    head = f"{'code':<10}{'runs':>5}{'load':>6}{'CPU s':>7}" + "".join(
        f"{PHASE_NAMES[p]:>13}" for p in PHASES
    )
    lines = [head]
    for label, rows in results.items():
        lines.append(
            f"{label:<10}{len(rows):>5}{_fmt(_median(rows, 'load_1m')):>6}"
            f"{_fmt(_median(rows, 'cpu_s')):>7}"
            + "".join(f"{_fmt(_median(rows, p)):>13}" for p in PHASES)
        )
    return lines


def run(args: argparse.Namespace) -> int:
    codes = dict(c.split("=", 1) for c in args.code) or {"this": str(ROOT)}
    results: dict[str, list[dict[str, Any]]] = {label: [] for label in codes}
    failed = 0
    for i in range(args.runs):
        for label, code in codes.items():
            row = one_run(str(Path(code).resolve()), args.containers, args.timeout)
            results[label].append(row)
            if row["first"] is None:
                failed += 1
                print(f"run {i + 1} {label}: no first tuple\n{row.get('output', '')}")
            else:
                print(
                    f"run {i + 1} {label}: first tuple {row['first']:.2f}s  "
                    f"cpu {row['cpu_s']:.2f}s  load {row['load_1m']:.2f}",
                    flush=True,
                )
    print("seconds from the command's start (medians):")
    for line in table(results):
        print(line)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps(
            {
                "containers": args.containers,
                "cpus": os.cpu_count(),
                "codes": codes,
                "runs": results,
            },
            indent=2,
        )
        + "\n"
    )
    print(f"written to {args.out}")
    return 1 if failed else 0
