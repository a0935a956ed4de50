"""Headwater, Bytewax, PySpark and the Python floor side by side: IoT pipeline, word count.

Two workloads, each with its user functions, data, floor, Headwater DSL
pipeline, Bytewax flow and PySpark query in a package of its own:

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
  hop between them; headwater-eo: the same exactly once, with a checkpoint
  every ``--checkpoints`` seconds;
* headwater-par: two tasks per source, the data split before the run into one
  file per task (``split_data``). IoT: by sensor (with
  ``headwater.dsl.partition_of``), and each task of one component runs the
  whole pipeline over its own file (``key_by(..., partitioned=True)``: no
  hop). Word count: the sentences dealt out in turn; two splitting tasks send
  each word to its word's counting task, one of two. headwater-par-eo: the
  same exactly once;
* bytewax: ``python -m bytewax.run`` of the flow, one worker (``bytewax``)
  and two worker processes (``bytewax-2``, the two cores Headwater uses);
* pyspark: the workload as a PySpark Structured Streaming query in local mode
  (``local[2]``): its driver and JVM. Spark reads the batches as text files
  (``bench/peer_pyspark.py``): written before its run at maximum rate, by a
  feeder thread in its driver as they become due at a fixed rate.

Each run goes as fast as it can (the rate counts from the first batch read
to the last record at the sink, so start-up is left out), or, with
``--rate``, is offered records at a fixed rate (``half``: half of
Headwater's maximum, measured first) and reports end-to-end latency (see
``peer_kit``). Every runner must
produce the same results (the bench refuses a run that disagrees, and at a
fixed rate keeps it marked ``disagrees``; for
PySpark's word count, whose update mode emits a row per word changed in a
micro-batch, the final counts). ``--runners`` picks some of them. CPU
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

import msgpack
import psutil

from bench.iot import functions as iot
from bench.wc import functions as wc
from headwater.cloud.local import LocalCluster

RESULTS = Path(__file__).with_name("results")
RUNNERS = (
    "floor",
    "headwater",
    "headwater-eo",
    "headwater-par",
    "headwater-par-eo",
    "bytewax",
    "bytewax-2",
    "pyspark",
)
PARTITIONED = ("headwater-par", "headwater-par-eo")  # workloads with split_data only
PARTITIONS = 2
# workload -> (its functions, what the rate counts, what the source offers)
WORKLOADS: dict[str, tuple[Any, str, str]] = {
    "iot": (iot, "readings", "readings"),
    "wordcount": (wc, "words", "sentences"),
}
Arrival = Callable[[Any], int]  # a result's latency key -> the index of the record it waited for


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pipeline", choices=sorted(WORKLOADS), default="iot")
    p.add_argument("--size", type=int, default=500_000, help="readings, or sentences")
    p.add_argument("--runs", type=int, default=3, help="repetitions of each runner")
    p.add_argument(
        "--rate",
        type=_rate,
        default=0.0,
        help="offer this many readings (or sentences) a second and measure latency; "
        "'half': half of Headwater's maximum, measured first in the same run; "
        "0: as fast as each runner can",
    )
    p.add_argument(
        "--checkpoints",
        type=float,
        default=1.0,
        help="headwater-eo: exactly once, checkpoint interval (s)",
    )
    p.add_argument(
        "--runners",
        type=_runners,
        default=None,
        help=f"comma-separated, of {','.join(RUNNERS)} (default: all)",
    )
    p.add_argument(
        "--out", type=Path, default=None, help="default: results/peers-WORKLOAD[-rate].json"
    )


def _rate(text: str) -> float | str:
    if text == "half":
        return text
    try:
        rate = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give records a second, or 'half'") from None
    if rate < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: a rate cannot be negative")
    return rate


def _runners(text: str) -> tuple[str, ...]:
    chosen = tuple(r.strip() for r in text.split(",") if r.strip())
    if not chosen or any(r not in RUNNERS for r in chosen):
        raise argparse.ArgumentTypeError(f"{text!r}: runners are among {','.join(RUNNERS)}")
    return chosen


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
                        cmdline = p.cmdline()
                        cmd_seen = bool(cmdline)
                        name = _role(cmdline)
                        parent = p.parent()
                    if parent and _role(parent.cmdline()) == "spark jvm":
                        if name == "spark jvm":
                            continue  # forked, not exec'd yet: the JVM's own pages
                        name = "spark shell command"  # Hadoop's chmod, readlink (no native lib)
                except psutil.Error:
                    continue
                seen = self.procs.setdefault(p.pid, {"role": name, "rss": 0, "cpu": 0.0})
                seen["rss"], seen["cpu"] = max(seen["rss"], rss), max(seen["cpu"], cpu)
                if cmd_seen:  # spark-submit's scripts exec the JVM in their process; an
                    seen["role"] = name  # exiting process has no command line left

    def report(self) -> list[dict[str, Any]]:
        return [
            {
                "process": v["role"],
                "peak_rss_mb": round(v["rss"] / 2**20, 1),
                "cpu_s": round(v["cpu"], 2),
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


def _one(
    package: str,
    runner: str,
    data: Path,
    work: Path,
    expect: int,
    n: int,
    args: argparse.Namespace,
    arrival: Arrival | None = None,
) -> dict[str, Any]:
    out = work / f"{runner}-{time.monotonic_ns()}.json"
    env = {
        "BENCH_DATA": str(data),
        "BENCH_OUT": str(out),
        "BENCH_EXPECT": str(expect),
        "BENCH_RATE": repr(args.rate),
    }
    if runner.endswith("-eo"):
        env["BENCH_CHECKPOINTS"] = repr(args.checkpoints)
    parts = getattr(args, "expect_parts", None)
    if runner in PARTITIONED:
        env["BENCH_EXPECT_PARTS"] = ",".join(map(str, parts or ()))
        env["BENCH_PARTITIONS"] = str(PARTITIONS)
    # Bytewax's event clock moves the watermark on with the wall clock between readings, and
    # this data's event time runs hundreds of times faster than that: a stall of a few ms
    # (this shared machine has them) makes the next readings late, and they are dropped. One
    # second of slack covers a stall of a second and holds a window back by 200 readings
    # (2.5 ms at 80,000 readings/s).
    env["BENCH_BYTEWAX_WAIT_MS"] = "1000"
    topology = Path(__file__).with_name(package) / "headwater_topology.py"
    sampler = Sampler()
    sampler.start()
    try:
        if runner in PARTITIONED:
            cluster = LocalCluster(topology, containers=1, env=env)
            cluster.start()
            try:
                result = _merge([_wait_file(Path(f"{out}.w{i}"), 600) for i in range(PARTITIONS)])
            finally:
                cluster.stop()
        elif runner.startswith("headwater"):
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
        elif runner == "pyspark":
            cmd = [sys.executable, "-m", f"bench.{package}.pyspark_flow"]
            subprocess.run(cmd, env={**os.environ, **env}, check=True, timeout=900)
            result = json.loads(out.read_text())
        else:
            result = _bytewax(package, 2 if runner == "bytewax-2" else 1, env, out)
    finally:
        sampler.stop.set()
        sampler.join()
    start = result.get("start") or float(Path(str(out) + ".start").read_text())
    one = {
        "per_s": round(n / (result["end"] - start)),
        "summary": {k: v for k, v in result.items() if k not in ("start", "end")},
        "processes": sampler.report(),
    }
    if args.rate and arrival is not None:
        one["latency_ms"] = _latency(out, start, args.rate, arrival)
    return one


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
        addresses = ";".join(f"127.0.0.1:{_free_port()}" for _ in range(processes))
        cmds = [[*cmd, "-i", str(i), "-a", addresses] for i in range(processes)]
    else:
        cmds = [cmd]
    procs = [subprocess.Popen(c, env={**os.environ, **env}) for c in cmds]
    for p in procs:
        if p.wait(600) != 0:
            raise RuntimeError(f"bytewax exited with {p.returncode}")
    return _merge(
        [json.loads(f.read_text()) for f in sorted(out.parent.glob(f"{out.name}.w[0-9]"))]
    )


def _merge(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """The results of several workers or tasks: the last end, the figures summed."""
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


def _agrees(runner: str, package: str, summary: dict[str, Any], floor: dict[str, Any]) -> bool:
    if runner == "pyspark" and package == "wc":
        # update mode emits one row per word a micro-batch changed, not one per word
        # occurrence, so PySpark's records cannot be the others'; its final counts must be
        return all(summary[k] == floor[k] for k in ("distinct", "total"))
    return summary == floor


def run(args: argparse.Namespace) -> int:
    functions, unit, offered = WORKLOADS[args.pipeline]
    splits = hasattr(functions, "split_data")
    runners = args.runners or tuple(r for r in RUNNERS if splits or r not in PARTITIONED)
    if not splits and any(r in PARTITIONED for r in runners):
        raise SystemExit(f"{args.pipeline} has no partitioned variant ({', '.join(PARTITIONED)})")
    package = functions.__name__.split(".")[1]
    work = Path(tempfile.mkdtemp(prefix=f"hw-bench-{args.pipeline}-"))
    data = work / "data.msgpack"
    functions.make_data(data, args.size)
    if any(r in PARTITIONED for r in runners):  # one file per task, before the run
        args.expect_parts = functions.split_data(data, PARTITIONS)
    at_max = argparse.Namespace(**{**vars(args), "rate": 0.0})
    first = _one(package, "floor", data, work, 0, args.size, at_max)
    expect = first["summary"]["records"]
    n = args.size if unit == "readings" else expect  # every reading read, or every word
    if args.rate == "half":  # of Headwater's maximum, in what the source offers
        top = _one(package, "headwater", data, work, expect, n, at_max)["per_s"]
        args.rate = round(top * args.size / n / 2, -2)
        print(f"Headwater's maximum: {top:,} {unit}/s; offering {args.rate:g} {offered}/s")
    arrival = functions.arrival_index(data, args.size) if args.rate else None
    runs: dict[str, list[dict[str, Any]]] = {r: [] for r in runners}
    for i in range(args.runs):
        for runner in runners:
            r = _one(package, runner, data, work, expect, n, args, arrival)
            wrong = not _agrees(runner, package, r["summary"], first["summary"])
            if wrong and not args.rate:
                raise RuntimeError(f"{runner} disagrees: {r['summary']} != {first['summary']}")
            if wrong:  # paced, a runtime may drop records as late: keep the run, say so
                r["disagrees"] = True
            runs[runner].append(r)
            lat = r.get("latency_ms")
            print(
                f"run {i + 1} {runner}: {r['per_s']:,} {unit}/s"
                + (f", latency ms {lat}" if lat else "")
                + (f"; WRONG RESULTS {r['summary']}" if wrong else ""),
                flush=True,
            )
    medians = {k: statistics.median(r["per_s"] for r in v) for k, v in runs.items()}
    result: dict[str, Any] = {
        "pipeline": args.pipeline,
        "size": args.size,
        "unit": f"{unit}/s",
        "offered": f"{args.rate:g} {offered}/s" if args.rate else "maximum",
        "summary": first["summary"],
        "median_per_s": medians,
    }
    if args.rate:
        result["median_latency_ms"] = {
            k: {q: statistics.median(r["latency_ms"][q] for r in v) for q in ("p50", "p99", "p999")}
            for k, v in runs.items()
        }
    elif "headwater" in medians:
        result["ratios"] = {
            f"headwater / {k}": round(medians["headwater"] / m, 2)
            for k, m in medians.items()
            if k != "headwater"
        }
    if not args.rate and "floor" in medians:  # issue 20, target 1: / floor, / best Bytewax
        best = max((m for k, m in medians.items() if k.startswith("bytewax")), default=None)
        result["targets"] = {
            k: {
                "/ floor": round(medians[k] / medians["floor"], 2),
                **({"/ best bytewax": round(medians[k] / best, 2)} if best else {}),
            }
            for k in medians
            if k.startswith("headwater")
        }
    result["runs"] = runs
    print(json.dumps({k: v for k, v in result.items() if k != "runs"}, indent=2))
    for runner in runners:
        print(f"{runner}: processes of the last run: {runs[runner][-1]['processes']}")
    suffix = "-rate" if args.rate else ""
    out = args.out or RESULTS / f"peers-{args.pipeline}{suffix}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    return 0
