"""DSL fusion: a 5-step chain fused into one component versus a component per step.

The chain (``bench/dsl_topology.py``): an endless counter source -> parse ->
keep -> scale -> label -> sink, at most once, one container. Fused, the
five steps run as function calls inside the source's instance; unfused,
each is its own instance and every record crosses the stream manager five
times. The configurations alternate, ``--runs`` times each; the figure is
records/s reaching the sink step, over ``--duration`` seconds after
``--warmup``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from headwater.cloud.local import LocalCluster

TOPOLOGY = Path(__file__).with_name("dsl_topology.py")
RESULTS = Path(__file__).with_name("results") / "dsl_fusion.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=3, help="repetitions of each configuration")
    p.add_argument("--duration", type=float, default=15.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=5.0)
    p.add_argument("--out", type=Path, default=RESULTS)


def _sunk(cluster: LocalCluster) -> float:
    tasks = cluster.metrics()["tasks"].values()
    return float(sum(m.get("user:records:sink", 0) for m in tasks))


def _one(fuse: bool, args: argparse.Namespace) -> dict[str, Any]:
    cluster = LocalCluster(TOPOLOGY, containers=1, env={"BENCH_FUSE": "1" if fuse else "0"})
    cluster.start()
    try:
        cluster.wait_running()
        instances = len(cluster.plan.instances)
        time.sleep(args.warmup)
        n0, t0 = _sunk(cluster), time.monotonic()
        time.sleep(args.duration)
        n1, t1 = _sunk(cluster), time.monotonic()
        return {"records_per_s": round((n1 - n0) / (t1 - t0)), "instances": instances}
    finally:
        cluster.stop()


def run(args: argparse.Namespace) -> int:
    runs: dict[str, list[dict[str, Any]]] = {"fused": [], "unfused": []}
    for i in range(args.runs):
        for name in ("fused", "unfused"):
            r = _one(name == "fused", args)
            runs[name].append(r)
            print(f"run {i + 1} {name}: {r}", flush=True)
    medians = {k: statistics.median(r["records_per_s"] for r in v) for k, v in runs.items()}
    result = {
        "runs": runs,
        "median_records_per_s": medians,
        "ratio_fused_over_unfused": round(medians["fused"] / medians["unfused"], 2),
    }
    print(json.dumps(result, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0
