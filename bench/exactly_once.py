"""Exactly-once costs: checkpoints every 1 s vs none, checkpoint duration vs state size, recovery.

Three measurements, each over real local clusters of 2 containers:

* throughput of the log -> count -> sum -> sink pipeline with checkpoints every
  1 s against the same topology whose interval is an hour (no checkpoint in the
  window), alternating, ``--runs`` times each;
* checkpoint duration against keyed state size (``--state-keys``);
* time from SIGKILL of a bolt instance to resumed processing (the sink's
  executed count moving again in the new epoch), ``--kills`` times.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from headwater.cloud.local import LocalCluster
from headwater.common.connectors._log_spout import append_records
from headwater.common.runtime import key_hash

TOPOLOGY = Path(__file__).with_name("exactly_once_topology.py")
RESULTS = Path(__file__).with_name("results") / "exactly_once.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--runs", type=int, default=3, help="repetitions of each throughput config")
    p.add_argument("--duration", type=float, default=15.0, help="measured seconds per run")
    p.add_argument("--warmup", type=float, default=4.0)
    p.add_argument("--records", type=int, default=3_000_000, help="records in the input log")
    p.add_argument("--state-keys", default="1000,10000,100000,1000000")
    p.add_argument(
        "--trickle",
        type=float,
        default=2000,
        help="key updates a second into the state part's bolt once its keys are in",
    )
    p.add_argument("--kills", type=int, default=5)
    p.add_argument(
        "--parts",
        default="throughput,state,recovery",
        help="which measurements to run (comma-separated)",
    )
    p.add_argument("--out", type=Path, default=RESULTS)


def _produce(log: Path, n: int, keys: int = 1000) -> None:
    rows: dict[int, list[list[Any]]] = defaultdict(list)
    for i in range(n):
        key = f"k{i % keys}"
        rows[key_hash(key) % 4].append([key, i // keys])
    for p, r in rows.items():
        for start in range(0, len(r), 100_000):
            append_records(log, p, r[start : start + 100_000])


def _executed(cluster: LocalCluster, component: str) -> float:
    return float(cluster.metrics()["components"][component]["executed"])


def _wait(cond: Any, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError("benchmark condition not met in time")
        time.sleep(0.05)


def throughput(args: argparse.Namespace, log: Path, tmp: Path) -> dict[str, Any]:
    rates: dict[str, list[float]] = {"checkpoints every 1 s": [], "no checkpoints": []}
    durations: list[float] = []
    for run in range(args.runs):
        for name, interval in (("checkpoints every 1 s", "1"), ("no checkpoints", "3600")):
            out = tmp / f"out-{run}-{interval}"
            env = {"BENCH_LOG": str(log), "BENCH_OUT": str(out), "BENCH_INTERVAL": interval}
            cluster = LocalCluster(TOPOLOGY, containers=2, env=env)
            cluster.start()
            try:
                cluster.wait_running(60)
                time.sleep(args.warmup)
                n0, t0 = _executed(cluster, "sink"), time.monotonic()
                time.sleep(args.duration)
                n1, t1 = _executed(cluster, "sink"), time.monotonic()
                rate = (n1 - n0) / (t1 - t0)
                rates[name].append(rate)
                if interval == "1":
                    durations += [
                        c["duration_ms"]
                        for c in cluster.get("/checkpoints")["checkpoints"]
                        if c["state"] == "COMPLETE"
                    ]
                print(f"run {run + 1}/{args.runs} {name}: {rate:,.0f} records/s", flush=True)
            finally:
                cluster.stop()
    med = {k: statistics.median(v) for k, v in rates.items()}
    return {
        "records_per_s": rates,
        "median": med,
        "ratio_checkpointed_over_none": med["checkpoints every 1 s"] / med["no checkpoints"],
        "checkpoint_ms_median": statistics.median(durations) if durations else None,
    }


def _pauses(path: Path) -> list[float]:
    """The bolt's longest gap between two records, per second (``Hold``), in ms."""
    return [float(x) for x in path.read_text().split()] if path.exists() else []


def state_size(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    for keys in [int(k) for k in args.state_keys.split(",")]:
        gaps = Path(tempfile.mkdtemp(prefix="hw-bench-gaps-")) / "gaps"
        env = {
            "BENCH_SHAPE": "state",
            "BENCH_KEYS": str(keys),
            "BENCH_INTERVAL": "1",
            "BENCH_TRICKLE": str(args.trickle),
            "BENCH_OUT": str(gaps),
        }
        cluster = LocalCluster(TOPOLOGY, containers=2, env=env)
        cluster.start()
        try:
            cluster.wait_running(60)
            _wait(lambda k=keys, c=cluster: _executed(c, "hold") >= k, 300)
            # the checkpoints during and just after the load carry the keys loaded since
            # their base (incremental snapshots): measure once the state only trickles
            loaded = cluster.get("/checkpoints")["latest_complete"]
            _wait(
                lambda f=loaded, c=cluster: c.get("/checkpoints")["latest_complete"] >= f + 4, 300
            )
            first = cluster.get("/checkpoints")["latest_complete"]
            seen = len(_pauses(gaps))
            _wait(lambda f=first, c=cluster: c.get("/checkpoints")["latest_complete"] >= f + 5, 300)
            pauses = _pauses(gaps)[seen:]
            done = [
                c
                for c in cluster.get("/checkpoints")["checkpoints"]
                if c["state"] == "COMPLETE" and c["id"] > first
            ]
            row = {
                "keys": keys,
                "state_bytes": statistics.median(c["size_bytes"] for c in done),
                "duration_ms": statistics.median(c["duration_ms"] for c in done),
                "samples": len(done),
                # per second (one checkpoint a second), the longest gap between records
                "pause_ms": statistics.median(pauses) if pauses else None,
                "pause_max_ms": max(pauses, default=None),
                "pause_samples": len(pauses),
            }
            rows.append(row)
            print(
                f"state {keys:,} keys: {row['state_bytes'] / 1e6:.2f} MB, "
                f"checkpoint {row['duration_ms']:.0f} ms, pause {row['pause_ms']} ms "
                f"(max {row['pause_max_ms']} ms, {len(pauses)} s)",
                flush=True,
            )
        finally:
            cluster.stop()
    return rows


def recovery(args: argparse.Namespace, log: Path, tmp: Path) -> dict[str, Any]:
    """SIGKILL a bolt instance; time until every instance is restored and the spouts run
    again (the master reports RUNNING in a new epoch), and until the sink processes again
    (its executed count, reported with 1 s heartbeats, grows)."""
    env = {
        "BENCH_LOG": str(log),
        "BENCH_OUT": str(tmp / "out-recovery"),
        "BENCH_INTERVAL": "1",
        "BENCH_RATE": "5000",
    }
    cluster = LocalCluster(TOPOLOGY, containers=2, env=env)
    cluster.start()
    restored: list[float] = []
    resumed: list[float] = []
    try:
        cluster.wait_running(60)
        for k in range(args.kills):
            _wait(lambda k=k: cluster.get("/checkpoints")["latest_complete"] >= 2 * (k + 1), 120)
            epoch = cluster.summary()["epoch"]
            tasks = cluster.metrics()["tasks"]
            victim = next(int(m["pid"]) for m in tasks.values() if m["component"] == "total")
            base = _executed(cluster, "sink")
            t0 = time.monotonic()
            os.kill(victim, signal.SIGKILL)
            _wait(
                lambda e=epoch: (s := cluster.summary())["epoch"] > e and s["state"] == "RUNNING",
                120,
            )
            restored.append(time.monotonic() - t0)
            _wait(lambda b=base: _executed(cluster, "sink") > b, 120)
            resumed.append(time.monotonic() - t0)
            print(
                f"kill {k + 1}: restored after {restored[-1]:.2f} s, sink processing after "
                f"{resumed[-1]:.2f} s",
                flush=True,
            )
    finally:
        cluster.stop()
    return {
        "restored_s": restored,
        "resumed_s": resumed,
        "median_restored_s": statistics.median(restored),
        "median_s": statistics.median(resumed),
    }


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="hw-bench-eo-"))
    log = tmp / "log"
    parts = set(args.parts.split(","))
    result: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    result["machine"] = {"cpus": os.cpu_count()}
    if parts & {"throughput", "recovery"}:
        print(f"writing {args.records:,} records to the durable log ...", flush=True)
        _produce(log, args.records)
    if "throughput" in parts:
        t = result["throughput"] = throughput(args, log, tmp)
        t["command"] = (
            "python -m bench exactly-once --parts throughput "
            f"--runs {args.runs} --duration {args.duration:g}"
        )
        print(
            f"throughput medians: {json.dumps(t['median'])}; "
            f"ratio {t['ratio_checkpointed_over_none']:.3f}"
        )
    if "state" in parts:
        result["state_size"] = state_size(args)
    if "recovery" in parts:
        result["recovery"] = recovery(args, log, tmp)
        print(f"recovery median {result['recovery']['median_s']:.2f} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.out}")
    return 0
