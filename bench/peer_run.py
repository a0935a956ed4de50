"""One run of one peer runner (``bench/peers.py``, ``bench/scale.py``): its processes, what
they cost, and its result.

The runners:

* ``floor``: one process that decodes the batches and calls the functions, with no
  runtime at all; ``floor-par``: ``--partitions`` such processes at once, each over one
  task's file and with no exchange between them: what this machine gives N independent
  processes (for word count a ceiling, not a word count: each counts its own file's words);
* ``headwater``: the DSL pipeline on a local cluster, at most once, one task per stage;
  ``headwater-eo``: the same exactly once;
* ``headwater-par``: the data-parallel shape, ``--partitions`` tasks per stage on
  ``--containers`` containers (stream managers), the data split before the run into one
  file per task (the workload's ``split_data``); ``headwater-par-eo``: the same exactly
  once;
* ``bytewax``: one worker; ``bytewax-2``: two worker processes reading one partition (the
  two cores Headwater uses); ``bytewax-par``: ``--partitions`` worker processes and a
  source of as many partitions, each reading one task's file, so that the peer is
  measured at its best;
* ``pyspark``: the workload as a PySpark Structured Streaming query in local mode.

``Sampler`` samples every process under the bench's every 0.1 s: peak RSS and CPU seconds,
and the CPU spent after the run's start mark (``BENCH_OUT.start``, written as the first
record is handed on), so that CPU per record leaves start-up out as the rate does.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgpack
import psutil

from headwater.cloud.local import LocalCluster
from headwater.common._ports import free_ports

ROOT = Path(__file__).resolve().parent.parent
RUNNERS = (
    "floor",
    "floor-par",
    "headwater",
    "headwater-eo",
    "headwater-par",
    "headwater-par-eo",
    "bytewax",
    "bytewax-2",
    "bytewax-par",
    "pyspark",
)
PARTITIONED = (
    "floor-par",
    "headwater-par",
    "headwater-par-eo",
    "bytewax-par",
)  # split_data's files
Arrival = Callable[[Any], int]  # a result's latency key -> the index of the record it waited for


class Sampler(threading.Thread):
    """Peak RSS and CPU seconds of every process under this one, by command; with a
    ``mark``, also each process's CPU seconds from when that file appeared."""

    def __init__(self, mark: Path | None = None) -> None:
        super().__init__(daemon=True)
        self.stop = threading.Event()
        self.procs: dict[int, dict[str, Any]] = {}
        self.mark = mark
        self.marked = False
        self._lock = threading.Lock()

    def run(self) -> None:
        while not self.stop.wait(0.1):
            self.sample()

    def sample(self) -> None:
        """One look at every process under this one (the thread's every 0.1 s, and once more
        when a run's results are in: a loaded machine can starve the thread for longer than a
        short run's processes live)."""
        with self._lock:
            self._sample()

    def _sample(self) -> None:
        me = psutil.Process()
        marked_now = not self.marked and self.mark is not None and self.mark.exists()
        for p in me.children(recursive=True):
            try:
                with p.oneshot():
                    rss, cpu = p.memory_info().rss, sum(p.cpu_times()[:2])
                    cmdline = p.cmdline()
                    cmd_seen = bool(cmdline)
                    name = _role(cmdline)
                    parent = p.parent()
                parent_role = _role(parent.cmdline()) if parent else ""
                if name == parent_role == "_forkserver":
                    name = "instance"  # a fork of the server: its command line
                elif parent and name == parent_role == "container" and cmdline == parent.cmdline():
                    continue  # forked, not exec'd yet (its fork server): counted once it is
                if parent_role == "spark jvm":
                    if name == "spark jvm":
                        continue  # forked, not exec'd yet: the JVM's own pages
                    name = "spark shell command"  # Hadoop's chmod, readlink (no native lib)
            except psutil.Error:
                continue
            seen = self.procs.setdefault(p.pid, {"role": name, "rss": 0, "cpu": 0.0, "base": None})
            if seen["base"] is None and (marked_now or self.marked):
                # a process started after the mark spent all of its CPU in the run
                seen["base"] = cpu if marked_now else 0.0
            seen["rss"], seen["cpu"] = max(seen["rss"], rss), max(seen["cpu"], cpu)
            # spark-submit's scripts exec the JVM in their process; an exiting process has no
            # command line left; an instance whose server died first is no server
            if cmd_seen and not (seen["role"] == "instance" and name == "_forkserver"):
                seen["role"] = name
        self.marked = self.marked or marked_now

    def report(self) -> list[dict[str, Any]]:
        return [
            {
                "process": v["role"],
                "peak_rss_mb": round(v["rss"] / 2**20, 1),
                "cpu_s": round(v["cpu"], 2),
                # no mark seen (a runner that writes none): all of its CPU
                **({"run_cpu_s": round(v["cpu"] - (v["base"] or 0.0), 3)} if self.mark else {}),
            }
            for v in self.procs.values()
        ]


def _role(cmd: list[str]) -> str:
    if cmd and cmd[0].endswith("java"):  # PySpark's JVM, a child of its driver
        return "spark launcher" if "org.apache.spark.launcher.Main" in cmd else "spark jvm"
    if len(cmd) > 1 and cmd[1].endswith(("bin/spark-submit", "bin/spark-class")):
        return "spark launcher"  # the scripts that start the JVM (then exec it)
    module = cmd[cmd.index("-m") + 1] if "-m" in cmd[:-1] else " ".join(cmd[:2])
    if module.endswith(".instance") and "--task" in cmd:
        return f"instance {cmd[cmd.index('--task') + 1]}"
    if module.endswith(".pyspark_flow"):
        return "pyspark driver"
    return {"bytewax.run": "bytewax", "bench.iot.floor": "floor"}.get(
        module, module.rsplit(".", 1)[-1]
    )


def wait_file(path: Path, timeout: float) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.stat().st_size:
            try:
                return json.loads(path.read_text())  # type: ignore[no-any-return]
            except ValueError:
                pass  # being written
        time.sleep(0.05)
    raise RuntimeError(f"no result at {path} within {timeout:.0f}s")


def one(
    package: str,
    runner: str,
    data: Path,
    work: Path,
    expect: int,
    n: int,
    args: argparse.Namespace,
    arrival: Arrival | None = None,
) -> dict[str, Any]:
    """Run ``runner`` once over ``data`` (``n`` records counted); its rate, summary and
    processes. ``args``: ``rate``, ``checkpoints``, ``partitions``, ``containers`` and, for
    the partitioned runners, ``expect_parts`` (``split_data``'s figures)."""
    out = work / f"{runner}-{time.monotonic_ns()}.json"
    parts = args.partitions
    env = {
        "BENCH_DATA": str(data),
        "BENCH_OUT": str(out),
        "BENCH_EXPECT": str(expect),
        "BENCH_RATE": repr(args.rate),
        # the runners' processes import ``bench`` (the topologies, the flows, the floor)
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    if runner.endswith("-eo"):
        env["BENCH_CHECKPOINTS"] = repr(args.checkpoints)
    if runner in PARTITIONED:
        env["BENCH_EXPECT_PARTS"] = ",".join(map(str, args.expect_parts))
        env["BENCH_PARTITIONS"] = str(parts)
    # Bytewax's event clock moves the watermark on with the wall clock between readings, and
    # this data's event time runs hundreds of times faster than that: a stall of a few ms
    # (this shared machine has them) makes the next readings late, and they are dropped. One
    # second of slack covers a stall of a second and holds a window back by 200 readings
    # (2.5 ms at 80,000 readings/s).
    env["BENCH_BYTEWAX_WAIT_MS"] = "1000"
    topology = Path(__file__).with_name(package) / "headwater_topology.py"
    sampler = Sampler(Path(f"{out}.start"))
    sampler.start()
    try:
        if runner.startswith("headwater"):
            containers = args.containers if runner in PARTITIONED else 1
            cluster = LocalCluster(topology, containers=containers, env=env)
            cluster.start()
            try:
                if runner in PARTITIONED:
                    result = merge([wait_file(Path(f"{out}.w{i}"), 600) for i in range(parts)])
                else:
                    result = wait_file(out, 600)
                sampler.sample()  # every process of the cluster, before it stops
            finally:
                cluster.stop()
        elif runner == "floor":
            cmd = [sys.executable, "-m", f"bench.{package}.floor", str(data), str(out)]
            subprocess.run(cmd, env={**os.environ, **env}, check=True, timeout=600)
            result = json.loads(out.read_text())
        elif runner == "floor-par":
            result = _floors(package, parts, env, data, out)
        elif runner == "pyspark":
            cmd = [sys.executable, "-m", f"bench.{package}.pyspark_flow"]
            subprocess.run(cmd, env={**os.environ, **env}, check=True, timeout=900)
            result = json.loads(out.read_text())
        else:
            workers = {"bytewax": 1, "bytewax-2": 2}.get(runner, parts)
            result = _bytewax(package, workers, env, out)
    finally:
        sampler.stop.set()
        sampler.join()
    start = result.get("start") or float(Path(str(out) + ".start").read_text())
    processes = sampler.report()
    measured = {
        "per_s": round(n / (result["end"] - start)),
        "summary": {k: v for k, v in result.items() if k not in ("start", "end")},
        "processes": processes,
        "run_cpu_us": round(sum(p.get("run_cpu_s", 0.0) for p in processes) / n * 1e6, 3),
        "peak_rss_mb": round(sum(p["peak_rss_mb"] for p in processes), 1),
    }
    if args.rate and arrival is not None:
        measured["latency_ms"] = _latency(out, start, args.rate, arrival)
    return measured


def _latency(out: Path, t0: float, rate: float, arrival: Arrival) -> dict[str, float]:
    """End to end: each result's arrival at the sink minus the due time of the record that
    made it computable (``t0 + index / rate``, as the source offered it)."""
    lat: list[float] = []
    for f in out.parent.glob(f"{out.name}*.lat"):
        keys, times = msgpack.unpackb(f.read_bytes(), raw=False, use_list=False)
        lat.extend((t - t0 - arrival(k) / rate) * 1000 for k, t in zip(keys, times, strict=True))
    lat.sort()

    def q(p: float) -> float:
        return round(lat[min(len(lat) - 1, int(p * len(lat)))], 2)

    return {
        "p50": q(0.5),
        "p99": q(0.99),
        "p999": q(0.999),
        "max": round(lat[-1], 2),
        "results": len(lat),
    }


def _bytewax(package: str, processes: int, env: dict[str, str], out: Path) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "bytewax.run", f"bench.{package}.bytewax_flow:flow"]
    if processes > 1:
        addresses = ";".join(f"127.0.0.1:{port}" for port in free_ports(processes))
        cmds = [[*cmd, "-i", str(i), "-a", addresses] for i in range(processes)]
    else:
        cmds = [cmd]
    _run_all(cmds, env, "bytewax")
    worker = re.compile(re.escape(out.name) + r"\.w\d+")
    return merge(
        [json.loads(f.read_text()) for f in out.parent.iterdir() if worker.fullmatch(f.name)]
    )


def _floors(package: str, parts: int, env: dict[str, str], data: Path, out: Path) -> dict[str, Any]:
    """``parts`` floor processes at once, floor ``i`` over ``data.p<i>``; from the first
    one's start to the last one's end."""
    outs = [Path(f"{out}.w{i}") for i in range(parts)]
    floor = [sys.executable, "-m", f"bench.{package}.floor"]
    _run_all([[*floor, f"{data}.p{i}", str(o)] for i, o in enumerate(outs)], env, "a floor")
    results = [json.loads(o.read_text()) for o in outs]
    start = min(r.pop("start") for r in results)
    return {**merge(results), "start": start}


def _run_all(cmds: list[list[str]], env: dict[str, str], what: str) -> None:
    """Start every command at once and wait for all of them; any that fails fails the run,
    and none is left running."""
    procs = [subprocess.Popen(c, env={**os.environ, **env}) for c in cmds]
    try:
        for p in procs:
            if p.wait(600) != 0:
                raise RuntimeError(f"{what} process exited with {p.returncode}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()


def merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The results of several workers or tasks: the last end, the figures summed."""
    merged: dict[str, Any] = {"end": max(p["end"] for p in parts)}
    for k in parts[0]:
        if k != "end":
            merged[k] = sum(p[k] for p in parts)  # every summary figure adds up over workers
    return merged
