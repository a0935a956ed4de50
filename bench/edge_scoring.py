"""The agent's memory with an ONNX model scoring at the edge, in ``--footprint single``.

Real daemons as ``python -m bench edge`` runs them (an MQTT broker, ``headwater
master``, a worker, ``headwater agent --footprint single``): the bench's edge subgraph
(``bench/edge_topology.py``: readings -> stamp -> the outbox) without scoring, and with
``BENCH_SCORE=1``, where an edge ``score`` component (a ``ScoreBolt``) scores every row
with ``bench/scoring.py``'s ``LinearRegression`` exported to ONNX, shipped in the
submitted package as a rollout ships it (``headwater_models.json``,
``models/<sha256>.onnx``). One after the other in each of ``--repeat`` runs (medians):
the agent's peak RSS (sampled every 0.5 s), every reading landed once, every row scored.
``--malloc-arena-max N`` adds both again with ``MALLOC_ARENA_MAX=N`` for the daemons,
``--no-status-page`` both with an agent that serves no status page (no aiohttp).

Then, in fresh interpreters, what onnxruntime costs a process step by step (``VmRSS``
after ``import numpy``, ``import onnxruntime``, the first ``InferenceSession``, 100 runs
of 1,000 rows, a second session), with the scorer's session options (one intra-op and
one inter-op thread) and with memory options on top: ``enable_cpu_mem_arena=False``,
``enable_mem_pattern=False``, graph optimisation off.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.edge import TOPOLOGY, EdgeCluster, Landing, _landed, publish
from bench.edge_topology import SCORE_MODEL
from headwater._demo.run import start_broker
from headwater.common._package import build_package, package_files, zip_package
from headwater.common.runtime._procs import terminate

RESULTS = Path(__file__).with_name("results") / "edge-scoring.json"
# the process, step by step: VmRSS in MiB after each (argv: options as JSON, model file)
PROBE = """
import json, statistics, sys
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
opts, model = json.loads(sys.argv[1]), open(sys.argv[2], "rb").read()
out = {"interpreter": rss()}
import numpy
out["import numpy"] = rss()
import onnxruntime as ort
out["import onnxruntime"] = rss()
def session():
    o = ort.SessionOptions()
    o.intra_op_num_threads = o.inter_op_num_threads = 1
    o.log_severity_level = 3
    if opts.get("arena") is False:
        o.enable_cpu_mem_arena = False
    if opts.get("mem_pattern") is False:
        o.enable_mem_pattern = False
    if opts.get("optimise") is False:
        o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, o, providers=["CPUExecutionProvider"])
s = session()
out["first session"] = rss()
x = numpy.ones((1000, 2), "float32")
for _ in range(100):
    s.run(None, {s.get_inputs()[0].name: x})
out["100 runs of 1,000 rows"] = rss()
s2 = session()
out["second session"] = rss()
print(json.dumps(out))
"""
OPTIONS: dict[str, dict[str, bool]] = {
    "the scorer's (1 thread)": {},
    "+ enable_cpu_mem_arena=False": {"arena": False},
    "+ arena and mem_pattern off": {"arena": False, "mem_pattern": False},
    "+ arena off, graph optimisation off": {"arena": False, "optimise": False},
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=float, default=200.0, help="readings per second (all sensors)")
    p.add_argument("--duration", type=float, default=10.0, help="seconds of readings per run")
    p.add_argument("--repeat", type=int, default=2, help="runs of each, interleaved (medians)")
    p.add_argument("--probes", type=int, default=3, help="fresh interpreters per option set")
    p.add_argument(
        "--malloc-arena-max",
        type=int,
        default=0,
        help="also run both with this MALLOC_ARENA_MAX for the daemons (glibc malloc arenas)",
    )
    p.add_argument(
        "--no-status-page",
        action="store_true",
        help="also run both with an agent without its status page (no --status-port)",
    )
    p.add_argument("--out", type=Path, default=RESULTS)


def scoring_package(model: bytes) -> tuple[bytes, str]:
    """``bench/edge_topology.py``'s package with ``model`` as its ``score`` component's."""
    data, entry = build_package(str(TOPOLOGY))
    files = package_files(data)
    sha = hashlib.sha256(model).hexdigest()
    files[f"models/{sha}.onnx"] = model
    models = {
        "score": {"name": SCORE_MODEL, "kind": "onnx/1", "default": {"version": 1, "sha256": sha}}
    }
    files["headwater_models.json"] = json.dumps(models).encode()
    return zip_package(files), entry


def one(
    args: argparse.Namespace,
    work: Path,
    package: tuple[bytes, str] | None,
    env: dict[str, str],
    status_page: bool = True,
) -> dict[str, Any]:
    """One run of the agent in ``--footprint single``: scoring when ``package`` is given;
    ``env`` for the daemons too; with its status page (``--status-port``) or not."""
    work.mkdir(parents=True)
    port, broker, _ = start_broker(work)
    try:
        cluster = EdgeCluster(
            work / "run",
            port,
            (1.0, 1.0),
            footprint="single",
            env={"BENCH_SCORE": "1" if package else "0", **env},
            package=package,
            status_page=status_page,
        )
        landing = Landing(cluster.out)
        try:
            count = int(args.rate * args.duration)
            publish(port, args.rate, 0, count)
            _landed(landing, count, 120)
            metrics = cluster.status()["metrics"]
        finally:
            landing.stop.set()
            cluster.stop()
    finally:
        terminate([broker], 5.0)
    return {
        "rows": len(landing.arrived),
        "expected": count,
        "duplicates": landing.duplicates,
        "scored": landing.scored,
        "agent_peak_rss_mb": {k: round(v / 2**20, 1) for k, v in cluster.peak.items()},
        "processes_under_agent": cluster.processes,
        "score_metrics": {k: v for k, v in metrics.items() if "score" in k},
    }


def _score_us(metrics: dict[str, float]) -> float:
    """µs in model runs per scored row, from the agent's counters (its first run too)."""
    us = metrics.get("component:edgebench/score:user:score_us", 0.0)
    return round(us / max(1.0, metrics.get("component:edgebench/score:user:scored", 0.0)), 1)


def probes(model: Path, n: int) -> dict[str, dict[str, float]]:
    """Each option set's VmRSS steps (MiB, medians over ``n`` fresh interpreters)."""
    out: dict[str, dict[str, float]] = {}
    for label, opts in OPTIONS.items():
        seen: list[dict[str, float]] = []
        for _ in range(n):
            cmd = [sys.executable, "-c", PROBE, json.dumps(opts), str(model)]
            seen.append(json.loads(subprocess.run(cmd, capture_output=True, check=True).stdout))
        out[label] = {k: round(statistics.median(s[k] for s in seen), 1) for k in seen[0]}
        print(f"{label}: {out[label]}", flush=True)
    return out


def run(args: argparse.Namespace) -> int:
    from bench.scoring import make_models

    if args.repeat < 1:
        print("--repeat 1 or more")
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="hw-bench-edge-scoring-"))
    model = make_models()["onnx"]
    (tmp / "model.onnx").write_bytes(model)
    package = scoring_package(model)
    kinds: dict[str, tuple[tuple[bytes, str] | None, dict[str, str], bool]] = {
        "without scoring": (None, {}, True),
        "with scoring": (package, {}, True),
    }
    if args.malloc_arena_max:
        arenas = {"MALLOC_ARENA_MAX": str(args.malloc_arena_max)}
        kinds[f"without scoring, MALLOC_ARENA_MAX={args.malloc_arena_max}"] = (None, arenas, True)
        kinds[f"with scoring, MALLOC_ARENA_MAX={args.malloc_arena_max}"] = (package, arenas, True)
    if args.no_status_page:
        kinds["without scoring, no status page"] = (None, {}, False)
        kinds["with scoring, no status page"] = (package, {}, False)
    runs: dict[str, list[dict[str, Any]]] = {label: [] for label in kinds}
    for i in range(args.repeat):
        order = list(runs) if i % 2 == 0 else list(reversed(runs))
        for n, label in enumerate(order):
            r = one(args, tmp / f"{i}-{n}", *kinds[label])
            print(f"run {i + 1}, {label}: {r}", flush=True)
            wrong = r["rows"] != r["expected"] or r["duplicates"]
            want_scored = r["expected"] if kinds[label][0] else 0
            if wrong or r["scored"] != want_scored:
                raise RuntimeError(f"{label}, run {i + 1}: not every reading landed once, scored")
            runs[label].append(r)
    medians = {
        label: {
            k: statistics.median(r["agent_peak_rss_mb"][k] for r in rs)
            for k in rs[0]["agent_peak_rss_mb"]
        }
        for label, rs in runs.items()
    }
    result: dict[str, Any] = {
        "rate": args.rate,
        "duration_s": args.duration,
        "median_agent_peak_rss_mb": medians,
        "with - without (MB)": round(
            medians["with scoring"]["tree"] - medians["without scoring"]["tree"], 1
        ),
        "score_us_per_scored": {
            label: statistics.median(_score_us(r["score_metrics"]) for r in rs)
            for label, rs in runs.items()
            if kinds[label][0] and kinds[label][2]
        },
        "process_rss_mb": probes(tmp / "model.onnx", args.probes),
        "runs": runs,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0
