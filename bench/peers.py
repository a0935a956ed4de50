"""Workloads at maximum rate: Headwater, Bytewax and the Python floor, side by side.

Two workloads, each with its user functions, data, floor, Headwater DSL
pipeline and Bytewax flow in a package of its own:

* ``--pipeline iot`` (``bench/iot/``): parse JSON -> validate -> key by sensor -> 10 s
  event-time tumbling window statistics -> anomaly flag -> sink, over
  ``--size`` readings (1% malformed); the rate is in readings/s;
* ``--pipeline wordcount`` (``bench/wc/``, Heron's shape): sentences -> split -> key by
  word -> running count -> sink, over ``--size`` sentences of 10 words; the
  rate is in words/s.

Every runner reads the same file of msgpack batches and calls the same
functions:

* floor: one process that decodes the batches and calls the functions, with
  no runtime at all;
* headwater: the DSL pipeline on a local cluster, at most once: the source
  chain and the keyed chain fused into two instances, one stream-manager
  hop between them;
* bytewax: ``python -m bytewax.run`` of the flow, one worker (``bytewax``)
  and two worker processes (``bytewax-2``, the two cores Headwater uses).

Each run goes as fast as it can; the rate counts from the first batch read
to the last record at the sink, so start-up is left out. Every runner must
produce the same results (the bench refuses a run that disagrees). CPU
seconds and peak RSS are per process, sampled every 0.1 s. Runners alternate
within each of ``--runs`` repetitions; figures are medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from bench.iot import functions as iot
from bench.wc import functions as wc
from headwater.cloud.local import LocalCluster

RESULTS = Path(__file__).with_name("results")
RUNNERS = ("floor", "headwater", "bytewax", "bytewax-2")
# workload -> (its package, how to write its data, what the rate counts)
WORKLOADS: dict[str, tuple[str, Callable[[Path, int], None], str]] = {
    "iot": ("iot", iot.make_data, "readings"),
    "wordcount": ("wc", wc.make_data, "words"),
}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pipeline", choices=sorted(WORKLOADS), default="iot")
    p.add_argument("--size", type=int, default=500_000, help="readings, or sentences")
    p.add_argument("--runs", type=int, default=3, help="repetitions of each runner")
    p.add_argument("--out", type=Path, default=None, help="default: results/peers-WORKLOAD.json")


class Sampler(threading.Thread):
    """Peak RSS and CPU seconds of every process under this one, by command."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.procs: dict[int, dict[str, Any]] = {}

    def run(self) -> None:
        me = psutil.Process()
        while not self.stop.wait(0.1):
            for p in me.children(recursive=True):
                try:
                    with p.oneshot():
                        rss, cpu = p.memory_info().rss, sum(p.cpu_times()[:2])
                        name = _role(p.cmdline())
                except psutil.Error:
                    continue
                seen = self.procs.setdefault(p.pid, {"role": name, "rss": 0, "cpu": 0.0})
                seen["rss"], seen["cpu"] = max(seen["rss"], rss), max(seen["cpu"], cpu)

    def report(self) -> list[dict[str, Any]]:
        return [{"process": v["role"], "peak_rss_mb": round(v["rss"] / 2**20, 1),
                 "cpu_s": round(v["cpu"], 2)} for v in self.procs.values()]  # fmt: skip


def _role(cmd: list[str]) -> str:
    module = cmd[cmd.index("-m") + 1] if "-m" in cmd[:-1] else " ".join(cmd[:2])
    if module.endswith(".instance") and "--task" in cmd:
        return f"instance {cmd[cmd.index('--task') + 1]}"
    return {"bytewax.run": "bytewax", "bench.iot.floor": "floor"}.get(
        module, module.rsplit(".", 1)[-1]
    )


def _wait_file(path: Path, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            try:
                return json.loads(path.read_text())  # type: ignore[no-any-return]
            except ValueError:
                pass  # being written
        time.sleep(0.05)
    raise RuntimeError(f"no result at {path} within {timeout:.0f}s")


def _one(package: str, runner: str, data: Path, work: Path, expect: int, n: int) -> dict[str, Any]:
    out = work / f"{runner}-{time.monotonic_ns()}.json"
    env = {"BENCH_DATA": str(data), "BENCH_OUT": str(out), "BENCH_EXPECT": str(expect)}
    topology = Path(__file__).with_name(package) / "headwater_topology.py"
    sampler = Sampler()
    sampler.start()
    try:
        if runner == "headwater":
            cluster = LocalCluster(topology, containers=1, env=env)
            cluster.start()
            try:
                result = _wait_file(out, 600)
            finally:
                cluster.stop()
        elif runner == "floor":
            cmd = [sys.executable, "-m", f"bench.{package}.floor", str(data), str(out)]
            subprocess.run(cmd, env={**os.environ, **env}, check=True, timeout=600)
            result = json.loads(out.read_text())
        else:
            result = _bytewax(package, 2 if runner == "bytewax-2" else 1, env, out)
    finally:
        sampler.stop.set()
        sampler.join()
    start = result.get("start") or float(Path(str(out) + ".start").read_text())
    return {
        "per_s": round(n / (result["end"] - start)),
        "summary": {k: v for k, v in result.items() if k not in ("start", "end")},
        "processes": sampler.report(),
    }


def _bytewax(package: str, processes: int, env: dict[str, str], out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bytewax.run", f"bench.{package}.bytewax_flow:flow"]
    if processes > 1:
        addresses = ";".join(f"127.0.0.1:{_free_port()}" for _ in range(processes))
        cmds = [[*cmd, "-i", str(i), "-a", addresses] for i in range(processes)]
    else:
        cmds = [cmd]
    procs = [subprocess.Popen(c, env={**os.environ, **env}) for c in cmds]
    for p in procs:
        if p.wait(600) != 0:
            raise RuntimeError(f"bytewax exited with {p.returncode}")
    parts = [json.loads(f.read_text()) for f in sorted(out.parent.glob(f"{out.name}.w*"))]
    merged: dict[str, Any] = {"end": max(p["end"] for p in parts)}
    for k in parts[0]:
        if k != "end":
            merged[k] = sum(p[k] for p in parts)  # every summary figure adds up over workers
    return merged


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(args: argparse.Namespace) -> int:
    package, make_data, unit = WORKLOADS[args.pipeline]
    work = Path(tempfile.mkdtemp(prefix=f"hw-bench-{args.pipeline}-"))
    data = work / "data.msgpack"
    make_data(data, args.size)
    first = _one(package, "floor", data, work, 0, args.size)
    expect = first["summary"]["records"]
    n = args.size if unit == "readings" else expect  # every reading read, or every word
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in RUNNERS}
    for i in range(args.runs):
        for runner in RUNNERS:
            r = _one(package, runner, data, work, expect, n)
            if r["summary"] != first["summary"]:
                raise RuntimeError(f"{runner} disagrees: {r['summary']} != {first['summary']}")
            runs[runner].append(r)
            print(f"run {i + 1} {runner}: {r['per_s']:,} {unit}/s", flush=True)
    medians = {k: statistics.median(r["per_s"] for r in v) for k, v in runs.items()}
    result = {
        "pipeline": args.pipeline,
        "size": args.size,
        "unit": f"{unit}/s",
        "summary": first["summary"],
        "median_per_s": medians,
        "headwater_over_bytewax": round(medians["headwater"] / medians["bytewax"], 2),
        "headwater_over_bytewax_2": round(medians["headwater"] / medians["bytewax-2"], 2),
        "headwater_over_floor": round(medians["headwater"] / medians["floor"], 2),
        "runs": runs,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    for runner in RUNNERS:
        print(f"{runner}: processes of the last run: {runs[runner][-1]['processes']}")
    out = args.out or RESULTS / f"peers-{args.pipeline}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0
