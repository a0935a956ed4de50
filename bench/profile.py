"""Where Headwater's IoT pipeline spends its time per reading: py-spy on both instances.

Runs the Headwater runner (``--runner``: ``headwater`` or ``headwater-par``) of
``bench peers --pipeline iot`` over ``--size``
readings and, ``--delay`` seconds in, samples each of its two instance
processes with py-spy (``--duration`` s at ``--rate`` Hz, non-blocking).
Prints, per instance, the share of samples whose stack passes through each
of a list of frames (inclusive shares: they overlap), and the CPU seconds per
reading of every process. Needs ``py-spy`` (``pip install py-spy``) and the
rights to read another process's memory (root, or ptrace allowed).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

# (label, substring of a collapsed py-spy frame "function (file:line)")
FRAMES = (
    ("json.loads (user's parse)", "loads (json/__init__.py"),
    # a step's closure ``call``: _ops.py, _keyed_ops.py, _window_ops.py (no other dsl function
    # ends in "call")
    ("DSL chain, inclusive", "call (headwater/common/dsl/_"),
    ("  map/filter/key_by user functions", "(bench/iot/functions.py"),
    ("emit (route + buffer)", "emit (headwater/common/runtime/_emitter.py"),
    ("batch encoding (msgpack)", "encode (headwater/common/wire/_codec.py"),
    ("gateway thread", "Gateway.run (headwater/common/runtime/_gateway.py"),
    ("batch decoding (msgpack)", "decode (headwater/common/wire/_codec.py"),
    ("window step (WindowedReduce.add)", "add (headwater/common/dsl/_windows.py"),
    ("window firing (advance)", "advance (headwater/common/dsl/_windows.py"),
    ("sink (Collect)", "__call__ (bench/peer_kit.py"),
    ("source: read + decode batches (Feed.take)", "take (bench/peer_kit.py"),
    ("spout loop (next_tuple)", "next_tuple (headwater/common/dsl/_fused.py"),
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--size", type=int, default=3_000_000, help="readings")
    p.add_argument("--delay", type=float, default=6.0, help="seconds before sampling")
    p.add_argument("--duration", type=int, default=6, help="seconds of sampling")
    p.add_argument("--rate", type=int, default=200, help="samples a second")
    p.add_argument(
        "--runner",
        default="headwater",
        choices=("headwater", "headwater-par"),
        help="headwater: two fused stages, one hop; headwater-par: two data-parallel chains",
    )


def shares(raw: str) -> tuple[int, dict[str, float]]:
    """Total samples and the inclusive share of each of FRAMES in py-spy's raw output."""
    total = 0
    hits: Counter[str] = Counter()
    for line in raw.splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        total += int(n)
        for label, frame in FRAMES:
            if frame in stack:
                hits[label] += int(n)
    return total, {label: round(100 * hits[label] / total, 1) for label, _ in FRAMES if total}


def run(args: argparse.Namespace) -> int:
    if shutil.which("py-spy") is None:
        print("py-spy is not installed: pip install py-spy", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="hw-profile-"))
    out = work / "peers.json"
    cmd = [
        sys.executable,
        "-m",
        "bench",
        "peers",
        "--pipeline",
        "iot",
        "--size",
        str(args.size),
        "--runs",
        "1",
        "--runners",
        args.runner,
        "--out",
        str(out),
    ]
    bench = subprocess.Popen(cmd)
    deadline = time.monotonic() + 120
    instances: dict[str, int] = {}
    while len(instances) < 2 and time.monotonic() < deadline:
        for p in psutil.Process(bench.pid).children(recursive=True):
            try:
                c = p.cmdline()
            except psutil.Error:
                continue
            if "--task" in c and any(x.endswith(".instance") for x in c):
                instances[c[c.index("--task") + 1]] = p.pid
        time.sleep(0.2)
    if len(instances) < 2:
        bench.kill()
        print("the instances did not start", file=sys.stderr)
        return 1
    time.sleep(args.delay)
    spies = {
        task: subprocess.Popen(
            [
                "py-spy",
                "record",
                "-p",
                str(pid),
                "-d",
                str(args.duration),
                "-r",
                str(args.rate),
                "-f",
                "raw",
                "--nonblocking",
                "-o",
                str(work / f"task{task}.txt"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for task, pid in instances.items()
    }
    for spy in spies.values():
        spy.wait(args.duration + 60)
    if bench.wait(900) != 0:
        return 1
    result: dict[str, Any] = {"size": args.size, "instances": {}}
    for task in sorted(instances):
        total, pct = shares((work / f"task{task}.txt").read_text())
        result["instances"][f"instance {task}"] = {"samples": total, "percent": pct}
    peers = json.loads(out.read_text())["runs"][args.runner][0]
    result["readings_per_s"] = peers["per_s"]
    result["cpu_us_per_reading"] = {
        p["process"]: round(p["cpu_s"] / args.size * 1e6, 2) for p in peers["processes"]
    }
    print(json.dumps(result, indent=2))
    return 0
