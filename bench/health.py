"""Self-regulation: a load step and a load that rises and falls twice, against static configs.

Real daemons: ``headwater master --health-interval 1`` and one ``headwater worker``. Each
scenario runs its topologies side by side on that worker, each fed by its own writer at the
same rate at the same moments (``bench/health_load.py``: a log -> ``counter``, 15 ms a
record, one task keeps up with about 63 records/s -> a transactional sink, exactly-once,
``counter`` on 1 task at the start):

* ``load-step``: 15 s at 40 records/s, then 75 s at 80; policy ``auto`` (at most 4 tasks,
  cooldown 20 s, stabilization 30 s) beside a static configuration (policy ``off``);
* ``rise-fall`` (``--minutes``, 10 by default): 30 records/s, 80, 30, 80, 30 (a tenth,
  23 %, 25 %, 23 % and 18 % of the time); policy ``auto`` (at most 4 tasks, stabilization
  60 s, cooldown 30 s), the same policy in ``recommend``, and a static configuration.

Sampled every second per topology: the records written, the records ``counter`` processed
(its tasks' counters, summed over every task it had), the time its spout was throttled
(backpressure: the containers' ``throttled_ms``), its parallelism and revision; every 2 s
its health report's diagnoses and proposals. Per topology: the scaling actions (when,
from -> to, when seen applied), whether one reversed the previous within the stabilization
window, per phase the
throughput, backpressure time and largest lag (records written, not yet committed), per
rise and fall the actions and when they were seen applied, per rise the time from it to
resolution (the lag back under ``LAG_OK_S`` seconds of the rise's rate, for good), and
every record counted once (exactly-once). Results to ``bench/results/health.json``, with
each topology's trace (per second: t, written, processed, committed, throttled ms, tasks).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.health_load import Writer, committed, exactly_once_error, seed, source
from bench.health_summary import LAG_OK_S, Phase, Trace, summarize
from headwater._demo.run import get_json, wait_until
from headwater.cloud.master import join_token_on_host
from headwater.common._package import build_package
from headwater.common._ports import free_ports
from headwater.common.runtime._procs import spawn, terminate

RESULTS = Path(__file__).with_name("results") / "health.json"
LOW, HIGH = 30.0, 80.0
SHAPE = ((0.10, LOW), (0.23, HIGH), (0.25, LOW), (0.23, HIGH), (0.19, LOW))  # rise-fall
STEP = ((15.0, 40.0), (75.0, 80.0))  # load-step: s, records/s
STEP_POLICY: dict[str, Any] = {"max_parallelism": 4, "cooldown_s": 20, "stabilization_s": 30}
RISE_POLICY: dict[str, Any] = {"max_parallelism": 4, "cooldown_s": 30, "stabilization_s": 60}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--minutes", type=float, default=10.0, help="the rise-fall load's length")
    p.add_argument("--skip-step", action="store_true", help="only the rise-fall scenario")
    p.add_argument("--out", type=Path, default=RESULTS)


class Cluster:
    """A master sampling health every second and one worker."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.procs: list[Any] = []
        ready = work / "master.json"
        ports = [str(port) for port in free_ports(3)]
        self._spawn(
            "master",
            *("master", "--host", "127.0.0.1", "--port", ports[0], "--http-port", ports[1]),
            *("--state-dir", str(work / "master"), "--ready-file", str(ready)),
            *("--no-advertise", "--join-port", ports[2], "--health-interval", "1"),
        )
        info = wait_until(lambda: ready.exists() and json.loads(ready.read_text()), "master", 30)
        self.http = info["http"]
        self.token = (work / "master" / "admin.token").read_text().strip()
        join = join_token_on_host(work / "master", "worker", info, ttl_s=600)
        self._spawn(
            "worker",
            *("worker", "--master", info["grpc"], "--id", "w1", "--workdir", str(work / "w1")),
            *("--join", join, "--isolation", "none"),
        )
        wait_until(lambda: any(n["online"] for n in self.get("/api/v1/nodes")), "a worker", 60)

    def _spawn(self, name: str, *args: str) -> None:
        p = spawn(["-m", "headwater", *args], log_path=str(self.work / f"{name}.log"))
        self.procs.append(p)

    def get(self, path: str) -> Any:
        return get_json(f"{self.http}{path}", self.token)

    def request(self, method: str, path: str, data: bytes | None = None) -> Any:
        req = urllib.request.Request(
            f"{self.http}{path}",
            data=data,
            method=method,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            return json.loads(r.read() or b"null")

    def stop(self) -> None:
        terminate(list(reversed(self.procs)), 15.0)


class Topo:
    """One topology of a scenario: its writer, its trace and its health reports."""

    def __init__(self, cluster: Cluster, work: Path, name: str, policy: dict[str, Any]) -> None:
        self.cluster, self.name, self.policy = cluster, name, policy
        self.log, self.out = work / name / "log", work / name / "out"
        seed(self.log)
        (work / name).mkdir(parents=True, exist_ok=True)
        path = work / name / f"{name}.py"
        path.write_text(source(name, self.log, self.out, policy))
        data, entry = build_package(path)
        cluster.request("POST", f"/api/v1/topologies?{urlencode({'entry': entry})}", data)
        self.trace = Trace()
        self.reports: list[tuple[float, dict[str, Any]]] = []
        self.writer: Writer | None = None

    def base(self) -> str:
        return f"/api/v1/topologies/{self.name}"

    def ready(self) -> bool:
        tasks = self.cluster.get(f"{self.base()}/metrics")["tasks"].values()
        return len(tasks) == 3 and all("busy_ns" in v for v in tasks) and bool(committed(self.out))

    def start(self, rate: float) -> None:
        self.writer = Writer(self.log, rate)
        self.writer.start()

    def sample(self, t: float) -> None:
        assert self.writer is not None
        written = self.writer.n
        view = self.cluster.get(f"{self.base()}/metrics")
        current = int(self.cluster.get(f"{self.base()}/revisions")["current"])
        self.trace.add(t, written, view, current)

    def health(self, t: float) -> None:
        self.reports.append((t, self.cluster.get(f"{self.base()}/health")))

    def finish(self, timeout: float) -> dict[str, Any]:
        """Stops the writer, waits for every record at the sink; the exactly-once check."""
        assert self.writer is not None
        n = self.writer.stop()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(committed(self.out)) < n:
            time.sleep(1)
        error = exactly_once_error(committed(self.out), n)
        revisions = self.cluster.get(f"{self.base()}/revisions")["revisions"]
        report = self.cluster.get(f"{self.base()}/health")
        self.cluster.request("DELETE", self.base())
        return {
            "records": n,
            "exactly_once": error or "ok",
            "revisions": revisions,
            "report": report,
        }


def scenario(
    cluster: Cluster, work: Path, phases: list[Phase], topos: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """Runs ``topos`` (role: policy) side by side through ``phases``; their summaries."""
    prefix = work.name
    runs = {role: Topo(cluster, work, f"{prefix}-{role}", p) for role, p in topos.items()}
    for t in runs.values():
        wait_until(t.ready, f"{t.name} running", 120)
    for t in runs.values():
        t.start(phases[0].rate)
    t0, wall0, k = time.monotonic(), time.time(), 0
    load = [os.getloadavg()[0]]
    for phase in phases:
        for t in runs.values():
            assert t.writer is not None
            t.writer.rate = phase.rate
        while (now := time.monotonic() - t0) < phase.end:
            for t in runs.values():
                t.sample(now)
                if k % 2 == 0:
                    t.health(now)
            k += 1
            if k % 30 == 0:
                load.append(os.getloadavg()[0])
            time.sleep(max(0.0, 1.0 - (time.monotonic() - t0 - now)))
    out: dict[str, Any] = {
        "phases": [p.to_json() for p in phases],
        "load_average_1min": [round(min(load), 1), round(max(load), 1)],
    }
    for role, t in runs.items():
        done = t.finish(300)
        out[role] = summarize(
            t.trace, t.reports, phases, done, wall0, float(t.policy.get("stabilization_s", 0))
        )
        out[role]["policy"] = t.policy
    return out


def _phases(shape: list[tuple[float, float]], names: list[str]) -> list[Phase]:
    out, at = [], 0.0
    for (length, rate), name in zip(shape, names, strict=True):
        out.append(Phase(name, at, at + length, rate))
        at += length
    return out


def run(args: argparse.Namespace) -> int:
    work = Path(tempfile.mkdtemp(prefix="hw-bench-health-"))
    cluster = Cluster(work)
    results: dict[str, Any] = {"lag_ok_s": LAG_OK_S, "cores": os.cpu_count()}
    try:
        if not args.skip_step:
            phases = _phases(list(STEP), ["before", "step"])
            roles: dict[str, dict[str, Any]] = {
                "auto": {"mode": "auto", **STEP_POLICY},
                "static": {"mode": "off"},
            }
            results["load-step"] = scenario(cluster, work / "step", phases, roles)
            print(json.dumps(_brief(results["load-step"]), indent=1), flush=True)
        total = args.minutes * 60
        shape = [(share * total, rate) for share, rate in SHAPE]
        phases = _phases(shape, ["low-1", "high-1", "low-2", "high-2", "low-3"])
        roles = {
            "auto": {"mode": "auto", **RISE_POLICY},
            "recommend": {"mode": "recommend", **RISE_POLICY},
            "static": {"mode": "off"},
        }
        results["rise-fall"] = scenario(cluster, work / "rise", phases, roles)
    finally:
        cluster.stop()
    print(json.dumps({k: _brief(v) for k, v in results.items()}, indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=1) + "\n")  # with the traces
    return 0


def _brief(result: Any) -> Any:
    """A scenario's results without the per-second traces (they go to the JSON file)."""
    if not isinstance(result, dict):
        return result
    return {
        k: ({kk: vv for kk, vv in v.items() if kk != "trace"} if isinstance(v, dict) else v)
        for k, v in result.items()
    }
