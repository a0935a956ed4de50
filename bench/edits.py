"""Live edits: request to new code processing, per edit kind, and the untouched path's pause.

Real daemons: ``headwater master`` and one ``headwater worker`` running the
topology of ``bench/edits_topology.py`` in 2 containers, fed at a steady
``--rate`` from a durable log. Each round makes three edits through the
API, each against the current revision: attach a tap subgraph, replace
``counter`` with a new version (its keyed counts carry over), remove the
tap. For each edit:

* to first record: the request (POST) -> the first record processed by the
  new code (each new version and tap notes that moment once, in a file);
* to applied: the request -> the master marks the revision applied (the
  first checkpoint its code took is complete);
* pause: the longest gap between two records at ``mirror``, a bolt on a path
  no edit touches (it reads the same spout), from the request until the
  edit is applied plus 0.5 s; compared with the longest gap in as long a
  quiet stretch between edits (checkpoints alone).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.edits_topology import source
from headwater._demo.run import get_json, wait_until
from headwater.cloud.master import join_token_on_host
from headwater.common._package import build_package
from headwater.common._ports import free_ports
from headwater.common.connectors._log_spout import append_records
from headwater.common.runtime._procs import spawn, terminate

RESULTS = Path(__file__).with_name("results") / "edits.json"
QUIET_S = 3.0  # between edits, and the length of each quiet window


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=float, default=1000.0, help="records per second")
    p.add_argument("--rounds", type=int, default=5, help="rounds of attach, replace, remove")
    p.add_argument("--interval", type=float, default=1.0, help="checkpoint interval (s)")
    p.add_argument("--out", type=Path, default=RESULTS)


class Cluster:
    def __init__(self, work: Path, env: dict[str, str]) -> None:
        self.work = work
        self.procs: list[Any] = []
        ready = work / "master.json"
        grpc, http, join = free_ports(3)
        self._spawn(
            "master",
            "master",
            "--host",
            "127.0.0.1",
            "--port",
            str(grpc),
            "--http-port",
            str(http),
            "--state-dir",
            str(work / "master"),
            "--ready-file",
            str(ready),
            "--no-advertise",
            "--join-port",
            str(join),
        )
        info = wait_until(lambda: ready.exists() and json.loads(ready.read_text()), "master", 30)
        self.http = info["http"]
        self.token = (work / "master" / "admin.token").read_text().strip()
        self._spawn(
            "worker",
            "worker",
            "--master",
            info["grpc"],
            "--id",
            "w1",
            "--workdir",
            str(work / "w1"),
            "--join",
            join_token_on_host(work / "master", "worker", info, ttl_s=600),
            env=env,
        )
        wait_until(lambda: get_json(f"{self.http}/api/v1/nodes", self.token), "the worker", 30)

    def _spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        p = spawn(["-m", "headwater", *args], env=env, log_path=str(self.work / f"{name}.log"))
        self.procs.append(p)

    def post(self, path: str, data: bytes = b"") -> Any:
        req = urllib.request.Request(
            f"{self.http}{path}",
            data=data,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read())

    def revisions(self) -> dict[str, Any]:
        return get_json(f"{self.http}/api/v1/topologies/editbench/revisions", self.token)  # type: ignore[no-any-return]

    def stop(self) -> None:
        terminate(list(reversed(self.procs)), 15.0)


def _package(folder: Path, version: int, taps: list[str]) -> tuple[bytes, str]:
    folder.mkdir(parents=True)
    (folder / "editbench.py").write_text(source(version, taps))
    return build_package(folder / "editbench.py")


def _first(out: Path, prefix: str) -> float | None:
    stamps = [float(f.read_text()) for f in (out / "first").glob(f"{prefix}*")]
    return min(stamps) if stamps else None


def _longest_gap(gaps: list[tuple[float, float]], t0: float, t1: float) -> float:
    """Longest pause (ms) overlapping [t0, t1]; pauses under 10 ms are not noted."""
    inside = [b - a for a, b in gaps if a < t1 and b > t0]
    return round(max(inside, default=0.01) * 1000, 1)


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="hw-bench-edits-"))
    out = tmp / "out"
    n = int(args.rate * (args.rounds * 3 * (QUIET_S + 4) + 60))
    for start in range(0, n, 100_000):
        append_records(
            tmp / "log", 0, [[f"k{i % 8}", i] for i in range(start, min(n, start + 100_000))]
        )
    env = {
        "BENCH_LOG": str(tmp / "log"),
        "BENCH_OUT": str(out),
        "BENCH_RATE": str(args.rate),
        "BENCH_INTERVAL": str(args.interval),
    }
    cluster = Cluster(tmp, env)
    edits: list[dict[str, Any]] = []
    quiet: list[tuple[float, float]] = []
    try:
        data, entry = _package(tmp / "code" / "r1", 1, [])
        cluster.post(f"/api/v1/topologies?{urlencode({'entry': entry, 'containers': 2})}", data)
        wait_until(lambda: _first(out, "counter-v1"), "the first records", 60)
        time.sleep(QUIET_S)
        version, k = 1, 0
        for _ in range(args.rounds):
            for kind in ("attach", "replace", "remove"):
                t_quiet = time.time()
                time.sleep(QUIET_S)
                quiet.append((t_quiet, time.time()))
                k += 1
                tap = f"tap_{(k + 2) // 3}"
                if kind == "replace":
                    version += 1
                taps = [tap] if kind != "remove" else []
                data, entry = _package(tmp / "code" / f"e{k}", version, taps)
                base = cluster.revisions()["current"]
                query = {"action": kind, "base": base, "entry": entry}
                if kind == "remove":
                    query["components"] = f"{tap},{tap}_sink"
                t0 = time.time()
                rev = cluster.post(
                    f"/api/v1/topologies/editbench/revisions?{urlencode(query)}", data
                )["revision"]

                def status(rev: int = rev) -> str:
                    recs = cluster.revisions()["revisions"]
                    s: str = next(r for r in recs if r["revision"] == rev)["status"]
                    return s if s != "applying" else ""

                outcome = _poll(status, 60)
                t_applied = time.time()
                if outcome != "applied":
                    raise RuntimeError(f"revision {rev} {outcome}")
                first = None
                if kind != "remove":
                    prefix = f"counter-v{version}" if kind == "replace" else tap
                    first = _poll(partial(_first, out, prefix), 30)
                edits.append(
                    {"kind": kind, "revision": rev, "t0": t0, "applied": t_applied, "first": first}
                )
        time.sleep(1.0)
    finally:
        cluster.stop()
    gaps: list[tuple[float, float]] = []
    for f in out.glob("gaps-*.jsonl"):
        gaps.extend((a, b) for a, b in map(json.loads, f.read_text().splitlines()))
    results: dict[str, Any] = {
        "rate": args.rate,
        "rounds": args.rounds,
        "checkpoint_interval_s": args.interval,
        "kinds": {},
    }
    for kind in ("attach", "replace", "remove"):
        mine = [e for e in edits if e["kind"] == kind]
        applied = [(e["applied"] - e["t0"]) * 1000 for e in mine]
        firsts = [(e["first"] - e["t0"]) * 1000 for e in mine if e["first"] is not None]
        pauses = [_longest_gap(gaps, e["t0"], e["applied"] + 0.5) for e in mine]
        results["kinds"][kind] = {
            "to_first_record_ms": _summary(firsts),
            "to_applied_ms": _summary(applied),
            "untouched_pause_ms": _summary(pauses),
        }
    results["quiet_pause_ms"] = _summary([_longest_gap(gaps, a, b) for a, b in quiet])
    print(json.dumps(results, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _poll(cond: Any, timeout: float) -> Any:
    """Like wait_until, finer (20 ms): the times measured are a few hundred ms."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    raise RuntimeError(f"not within {timeout:.0f}s")


def _summary(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    return {
        "median": round(statistics.median(values), 1),
        "max": round(max(values), 1),
        "n": len(values),
    }
