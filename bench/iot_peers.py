"""The IoT sensor pipeline at maximum rate: Headwater, Bytewax and the Python floor, side by side.

parse JSON -> validate -> key by sensor -> 10 s event-time tumbling window
statistics -> anomaly flag -> sink (``bench/iot/functions.py``), over the
same file of msgpack batches (``--readings`` of them, 1% malformed), the
same user functions on every runner:

* floor: one process that decodes the batches and calls the functions, with
  a dict of open windows and no runtime (``bench/iot/floor.py``);
* headwater: the DSL pipeline (``bench/iot/headwater_topology.py``) on a
  local cluster, at most once: the source chain and the window chain fused
  into two instances, one stream-manager hop between them;
* bytewax: ``python -m bytewax.run`` of ``bench/iot/bytewax_flow.py``,
  ``fold_window`` with an event clock: one worker (``bytewax``), and two
  worker processes (``bytewax-2``, the two cores Headwater uses).

Each run reads everything as fast as it can; the rate is readings over the
time from the first batch read to the last window at the sink, so start-up
is left out. Every runner must produce the same windows, readings and
anomalies. CPU seconds and peak RSS are per process, sampled every 0.1 s.
Runners alternate within each of ``--runs`` repetitions; figures are medians.
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
from pathlib import Path
from typing import Any

import psutil

from bench.iot.functions import make_data
from headwater.cloud.local import LocalCluster

RESULTS = Path(__file__).with_name("results") / "iot_peers.json"
TOPOLOGY = Path(__file__).with_name("iot") / "headwater_topology.py"
RUNNERS = ("floor", "headwater", "bytewax", "bytewax-2")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--readings", type=int, default=500_000)
    p.add_argument("--runs", type=int, default=3, help="repetitions of each runner")
    p.add_argument("--out", type=Path, default=RESULTS)


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


def _one(runner: str, data: Path, work: Path, expect: int, n: int) -> dict[str, Any]:
    out = work / f"{runner}-{time.monotonic_ns()}.json"
    env = {"BENCH_DATA": str(data), "BENCH_OUT": str(out), "BENCH_EXPECT_WINDOWS": str(expect)}
    sampler = Sampler()
    sampler.start()
    try:
        if runner == "headwater":
            cluster = LocalCluster(TOPOLOGY, containers=1, env=env)
            cluster.start()
            try:
                result = _wait_file(out, 600)
            finally:
                cluster.stop()
        elif runner == "floor":
            cmd = [sys.executable, "-m", "bench.iot.floor", str(data), str(out)]
            subprocess.run(cmd, env={**os.environ, **env}, check=True, timeout=600)
            result = json.loads(out.read_text())
        else:
            result = _bytewax(2 if runner == "bytewax-2" else 1, env, out)
    finally:
        sampler.stop.set()
        sampler.join()
    start = result.get("start") or float(Path(str(out) + ".start").read_text())
    return {
        "readings_per_s": round(n / (result["end"] - start)),
        "summary": {k: result[k] for k in ("windows", "readings", "anomalies")},
        "processes": sampler.report(),
    }


def _bytewax(processes: int, env: dict[str, str], out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bytewax.run", "bench.iot.bytewax_flow:flow"]
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
    for k in ("windows", "readings", "anomalies"):
        merged[k] = sum(p[k] for p in parts)
    return merged


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="hw-bench-iot-"))
    data = work / "readings.msgpack"
    make_data(data, args.readings)
    first = _one("floor", data, work, 0, args.readings)
    expect = first["summary"]["windows"]
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in RUNNERS}
    for i in range(args.runs):
        for runner in RUNNERS:
            r = _one(runner, data, work, expect, args.readings)
            if r["summary"] != first["summary"]:
                raise RuntimeError(f"{runner} disagrees: {r['summary']} != {first['summary']}")
            runs[runner].append(r)
            print(f"run {i + 1} {runner}: {r['readings_per_s']:,} readings/s", flush=True)
    medians = {k: statistics.median(r["readings_per_s"] for r in v) for k, v in runs.items()}
    result = {
        "readings": args.readings,
        "summary": first["summary"],
        "median_readings_per_s": medians,
        "headwater_over_bytewax": round(medians["headwater"] / medians["bytewax"], 2),
        "headwater_over_bytewax_2": round(medians["headwater"] / medians["bytewax-2"], 2),
        "headwater_over_floor": round(medians["headwater"] / medians["floor"], 2),
        "runs": runs,
    }
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    for runner in RUNNERS:
        print(f"{runner}: processes of the last run: {runs[runner][-1]['processes']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    return 0
