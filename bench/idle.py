"""What a running topology costs when nothing flows: the CPU of each process of a cluster.

Real daemons on this machine, as the integration tests start them: an MQTT broker,
``headwater master``, one ``headwater worker`` and two ``headwater agent``s (sites
``site1`` and ``site2``), running the IoT example (``examples/iot/pipeline.py``; its
checkpoint interval set to ``--interval``, both domains) with no sensor publishing. After
``--settle`` seconds, every process's CPU (user + system, ``/proc``) is read twice,
``--window`` seconds apart, and summed by kind: the daemons, the containers (edge and
cloud) and the instances; with the cloud domain's checkpoints completed in the window, the
CPU per checkpoint round.

``--tree PATH`` runs the daemons from another checkout (``PYTHONPATH=PATH``, a repository
root such as a ``git worktree`` of an older commit); repeat it to compare trees, run
alternately ``--runs`` times each (this machine is shared: medians, and the load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from headwater._demo.run import get_json, start_broker, wait_until
from headwater.cloud.master import join_token_on_host
from headwater.common._ports import free_ports
from headwater.common.runtime._procs import spawn, terminate

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).with_name("results") / "idle.json"
INTERVAL_KEY = '"topology.stateful.checkpoint.interval.seconds": 1,'
SITES = ("site1", "site2")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--interval", type=float, default=0.3, help="checkpoint interval (s)")
    p.add_argument("--window", type=float, default=30.0, help="seconds measured")
    p.add_argument("--settle", type=float, default=20.0, help="seconds after the submit")
    p.add_argument("--runs", type=int, default=3, help="runs of each tree, alternating")
    p.add_argument("--tree", action="append", default=None, metavar="PATH")
    p.add_argument("--out", type=Path, default=RESULTS)


def _kind(cmd: list[str], name: str) -> str:
    line = " ".join(cmd)
    for needle, kind in (
        ("headwater master", "master"),
        ("headwater agent", "agents"),
        ("headwater worker", "worker"),
        ("headwater.edge.container", "edge containers"),
        ("headwater.common.runtime.container", "cloud container"),
        ("mosquitto", "broker"),
    ):
        if needle in line:
            return kind
    return "instances" if name.startswith("hw-task") else "other"


def _cpu() -> dict[int, tuple[str, float]]:
    seen = {}
    for p in psutil.Process().children(recursive=True):
        try:
            with p.oneshot():
                t = p.cpu_times()
                seen[p.pid] = (_kind(p.cmdline(), p.name()), t.user + t.system)
        except psutil.Error:
            continue
    return seen


class Cluster:
    def __init__(self, work: Path, tree: Path) -> None:
        self.work = work
        self.procs: list[Any] = []
        self.env = {"PYTHONPATH": str(tree)}
        port, broker, _ = start_broker(work)
        self.procs.append(broker)
        ready = work / "master.json"
        grpc, http, join = free_ports(3)
        self._spawn("master", "master", "--host", "127.0.0.1", "--port", str(grpc),
                    "--http-port", str(http), "--join-port", str(join), "--no-advertise",
                    "--state-dir", str(work / "master"), "--ready-file", str(ready))  # fmt: skip
        info = wait_until(lambda: ready.exists() and json.loads(ready.read_text()), "master", 30)
        self.http = info["http"]
        self.token = (work / "master" / "admin.token").read_text().strip()

        def token(role: str) -> str:
            return join_token_on_host(work / "master", role, info, ttl_s=600)

        self._spawn("worker", "worker", "--master", info["grpc"], "--id", "w1",
                    "--workdir", str(work / "w1"), "--join", token("worker"))  # fmt: skip
        for site in SITES:
            self._spawn(f"gw-{site}", "agent", "--master", info["grpc"], "--id", f"gw-{site}",
                        "--label", f"site={site}", "--mqtt", f"127.0.0.1:{port}",
                        "--topic", f"sensors/{site}/#", "--workdir", str(work / f"gw-{site}"),
                        "--join", token("agent"))  # fmt: skip
        wait_until(
            lambda: len([n for n in self.api("/api/v1/nodes") if n["online"]]) == 3,
            "the worker and both agents",
            60,
        )

    def _spawn(self, name: str, *args: str) -> None:
        log = str(self.work / f"{name}.log")
        self.procs.append(spawn(["-m", "headwater", *args], env=self.env, log_path=log))

    def api(self, path: str) -> Any:
        return get_json(f"{self.http}{path}", self.token)

    def submit(self, pipeline: Path) -> None:
        subprocess.run(
            [sys.executable, "-m", "headwater", "submit", str(pipeline), "--master", self.http,
             "--token", self.token],
            env={**os.environ, **self.env}, check=True, capture_output=True, timeout=120,
        )  # fmt: skip

    def last_checkpoint(self) -> int:
        got = self.api("/api/v1/topologies/iot/checkpoints")
        items = got if isinstance(got, list) else got.get("checkpoints", [])
        return max((int(c["id"]) for c in items), default=0)

    def stop(self) -> None:
        terminate(list(reversed(self.procs)), 15.0)


def _pipeline(work: Path, interval: float) -> Path:
    folder = work / "iot"
    shutil.copytree(ROOT / "examples" / "iot", folder)
    pipeline = folder / "pipeline.py"
    text = pipeline.read_text()
    if INTERVAL_KEY not in text:
        raise SystemExit(f"{pipeline}: no {INTERVAL_KEY!r} to set the interval in")
    pipeline.write_text(text.replace(INTERVAL_KEY, INTERVAL_KEY.replace(" 1,", f" {interval},")))
    return pipeline


def measure(tree: Path, args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-idle-") as tmp:
        work = Path(tmp)
        cluster = Cluster(work, tree)
        try:
            cluster.submit(_pipeline(work, args.interval))
            time.sleep(args.settle)
            load = os.getloadavg()[0]
            before, first = _cpu(), cluster.last_checkpoint()
            t0 = time.monotonic()
            time.sleep(args.window)
            after, last = _cpu(), cluster.last_checkpoint()
            seconds = time.monotonic() - t0
        finally:
            cluster.stop()
    by_kind: dict[str, float] = {}
    for pid, (kind, cpu) in after.items():
        spent = cpu - before.get(pid, (kind, 0.0))[1]
        by_kind[kind] = by_kind.get(kind, 0.0) + spent
    total = sum(by_kind.values())
    rounds = last - first
    return {
        "load": round(load, 2),
        "seconds": round(seconds, 1),
        "checkpoints": rounds,
        "cpu_percent": round(total / seconds * 100, 1),
        "by_kind_percent": {k: round(v / seconds * 100, 2) for k, v in sorted(by_kind.items())},
        "cpu_ms_per_checkpoint": round(total / rounds * 1000, 1) if rounds else None,
    }


def run(args: argparse.Namespace) -> int:
    trees = [Path(t).resolve() for t in (args.tree or ["."])]
    for tree in trees:
        if not (tree / "headwater" / "__init__.py").exists():
            print(f"--tree {tree}: not a checkout of this repository (no headwater/)")
            return 2
    runs: dict[str, list[dict[str, Any]]] = {str(t): [] for t in trees}
    for i in range(args.runs):
        for tree in trees:
            got = measure(tree, args)
            runs[str(tree)].append(got)
            print(f"{tree} run {i + 1}: {json.dumps(got)}", flush=True)
    summary = {}
    for name, results in runs.items():
        kinds = sorted({k for r in results for k in r["by_kind_percent"]})
        summary[name] = {
            "cpu_percent": statistics.median(r["cpu_percent"] for r in results),
            "cpu_ms_per_checkpoint": statistics.median(
                r["cpu_ms_per_checkpoint"] or 0.0 for r in results
            ),
            "by_kind_percent": {
                k: round(statistics.median(r["by_kind_percent"].get(k, 0.0) for r in results), 2)
                for k in kinds
            },
        }
        print(f"{name}: medians {json.dumps(summary[name])}")
    result = {"interval_s": args.interval, "window_s": args.window, "runs": runs}
    args.out.write_text(json.dumps({**result, "medians": summary}, indent=1) + "\n")
    return 0
