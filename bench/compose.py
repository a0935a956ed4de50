"""The compose cluster: start times, memory per container, and throughput against bare processes.

* cold start: ``deploy/compose/build`` with no image, no layer cache, no dependency image and
  an empty wheelhouse (``--cold``; the base made from Debian packages is kept unless
  ``--cold-base``), then warm start:
  ``docker-compose up -d`` until the IoT example's first readings of both sites have landed;
* memory per container (``docker stats``): at rest (the example running, no sensors), and
  under the example's load (every sensor at ``--rate`` readings/s), peak of the samples;
* throughput: with both agents stopped, ``--readings`` readings per site wait in the broker
  (the agents' persistent sessions); then the agents start and the time until every one has
  landed in the cloud gives readings per second through broker, agents, uplinks, workers
  and landing. The same on bare processes (a broker, a master, two workers and two agents on
  this machine, as the compose file runs them), side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "deploy" / "compose"
RESULTS = Path(__file__).with_name("results") / "compose.json"
SITES = ("site0", "site1")
LANDED = (
    "import json; from headwater.common.connectors import manifests; "
    "print(json.dumps(sum(m['rows'] for m in "
    "manifests('/var/lib/headwater/data/iot/landing', 'readings'))))"
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cold", action="store_true", help="also time a build with no image cached")
    p.add_argument("--cold-base", action="store_true", help="--cold: make the base again too")
    p.add_argument("--readings", type=int, default=5000, help="per site, for the throughput")
    p.add_argument("--rate", type=float, default=20.0, help="per sensor under load (6 sensors)")
    p.add_argument("--runs", type=int, default=3, help="throughput runs per setup")


def _sh(*args: str, env: dict[str, str] | None = None, timeout: float = 1800) -> str:
    done = subprocess.run(
        list(args),
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=COMPOSE,
        check=False,
    )
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return done.stdout


class Compose:
    def __init__(self, project: str, env: dict[str, str]) -> None:
        self.project = project
        self.env = {
            **os.environ,
            "HEADWATER_API_PUBLISH": "127.0.0.1:",
            "HEADWATER_GRPC_PUBLISH": "127.0.0.1:",
            "HEADWATER_JOIN_PUBLISH": "127.0.0.1:",
            **env,
        }

    def __call__(self, *args: str, timeout: float = 600) -> str:
        return _sh("docker-compose", "-p", self.project, *args, env=self.env, timeout=timeout)

    def landed(self) -> int:
        return int(self("exec", "-T", "spark-jobs", "python3", "-c", LANDED))

    def memory(self) -> dict[str, float]:
        """MiB per service (the largest container of a scaled one)."""
        ids = self("ps", "-q").split()
        out: dict[str, float] = {}
        lines = _sh("docker", "stats", "--no-stream", "--format", "{{.Name}}\t{{.MemUsage}}", *ids)
        for line in lines.splitlines():
            name, usage = line.split("\t")
            service = re.sub(rf"^{self.project}_(.*)_\d+$", r"\1", name)
            out[service] = max(out.get(service, 0.0), _mib(usage.split("/")[0].strip()))
        return out

    def down(self) -> None:
        subprocess.run(
            ["docker-compose", "-p", self.project, "down", "-v", "--remove-orphans", "-t", "5"],
            capture_output=True,
            env=self.env,
            cwd=COMPOSE,
            timeout=300,
            check=False,
        )


def _mib(text: str) -> float:
    value, unit = re.match(r"([\d.]+)\s*([KMG]i?B|B)", text).groups()  # type: ignore[union-attr]
    scale = {"B": 1 / 2**20, "KiB": 1 / 1024, "MiB": 1.0, "GiB": 1024.0}
    return float(value) * scale.get(unit, 1.0)


def _until(cond: Any, what: str, timeout: float = 600, every: float = 0.5) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        if cond():
            return time.monotonic() - start
        time.sleep(every)
    raise SystemExit(f"timed out waiting for {what}")


def _sensors_args(site: str, count: int, first: int) -> list[str]:
    return [
        *("--site", site, "--count", str(count), "--first-seq", str(first)),
        *("--rate", "0", "--clock", "sim", "--state-dir", "/tmp/headwater-bench-sensors"),
    ]


def _publish(compose: Compose, count: int, first: int) -> None:
    """``count`` deterministic readings per sensor of each site from seq ``first``."""
    for site in SITES:
        compose(
            "run",
            "--rm",
            "--no-deps",
            f"sensors-{site}",
            "headwater",
            "sensors",
            "--broker",
            "mosquitto:1883",
            *_sensors_args(site, count, first),
            "--client-id",
            f"bench-{site}",
            "--username",
            "sensors",
            "--password-file",
            "/var/lib/headwater/secrets/sensors/mqtt-sensors.password",
        )


def compose_run(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if args.cold:
        images = ["headwater:latest", f"headwater:{_version()}"]
        repos = ["headwater-deps", "headwater-base"] if args.cold_base else ["headwater-deps"]
        for repo in repos:  # the build's own images, tagged by a hash of their inputs
            images += _sh(
                "docker", "image", "ls", repo, "--format", "{{.Repository}}:{{.Tag}}"
            ).split()
        subprocess.run(["docker", "rmi", "-f", *images], capture_output=True, check=False)
        subprocess.run(["docker", "builder", "prune", "-f"], capture_output=True, check=False)
        t = time.monotonic()
        with tempfile.TemporaryDirectory() as wheels:  # an empty wheelhouse: every download
            _sh(
                str(COMPOSE / "build"),
                "--no-cache",
                env={**os.environ, "HEADWATER_BUILD_CACHE": wheels},
            )
        out["cold_build_s"] = round(time.monotonic() - t, 1)
    else:
        _sh(str(COMPOSE / "build"))
    compose = Compose(f"hwbench{os.getpid()}", {"HEADWATER_SENSOR_RATE": str(args.rate)})
    compose.down()
    try:
        t = time.monotonic()
        compose("up", "-d", "--scale", "sensors-site0=0", "--scale", "sensors-site1=0")
        out["up_returns_s"] = round(time.monotonic() - t, 1)
        # warm start ends with readings of both sites landed: publish a few and wait
        _publish(compose, 10, 0)
        _until(lambda: compose.landed() >= 60, "the first readings to land")
        out["warm_start_s"] = round(time.monotonic() - t, 1)
        time.sleep(20)  # at rest: the example running, nothing published
        out["rest_mib"] = compose.memory()
        out["throughput_per_s"] = _throughput(
            args,
            stop=lambda: compose("stop", "agent-site0", "agent-site1"),
            publish=lambda count, first: _publish(compose, count, first),
            start=lambda: compose("start", "agent-site0", "agent-site1"),
            landed=compose.landed,
            before=60,
        )
        compose("up", "-d", "--no-recreate", "sensors-site0", "sensors-site1")
        peak: dict[str, float] = {}
        for _ in range(6):
            time.sleep(5)  # sampling under load
            for service, mib in compose.memory().items():
                peak[service] = max(peak.get(service, 0.0), mib)
        out["load_mib"] = peak
    finally:
        compose.down()
    return out


def _throughput(
    args: argparse.Namespace,
    stop: Any,
    publish: Any,
    start: Any,
    landed: Any,
    before: int,
) -> list[int]:
    """Readings per second of ``--runs`` backlogs, each published while the agents are down."""
    rates, first, total = [], 10, before
    for _ in range(args.runs):
        stop()
        publish(args.readings, first)
        first += args.readings
        start()
        began = time.monotonic()
        expected = total + len(SITES) * 3 * args.readings
        _until(lambda n=expected: landed() >= n, "the backlog to land", every=0.2)
        rates.append(round(len(SITES) * 3 * args.readings / (time.monotonic() - began)))
        total = expected
    return rates


class Bare:
    """The compose file's services as processes on this machine (no Spark): a broker, a
    master, two workers and two agents."""

    def __init__(self, work: Path) -> None:
        from headwater._demo.run import start_broker
        from headwater.common._ports import free_ports

        self.work, self.procs, self.agents = work, [], {}  # type: ignore[var-annotated]
        self.port, broker, _ = start_broker(work)
        self.procs.append(broker)
        ready = work / "master.json"
        grpc, http, join = free_ports(3)
        self._daemon(
            "master",
            [
                "master",
                "--host",
                "127.0.0.1",
                "--port",
                str(grpc),
                "--http-port",
                str(http),
                "--join-port",
                str(join),
                "--no-advertise",
                "--state-dir",
                str(work / "master"),
                "--ready-file",
                str(ready),
            ],
        )
        _until(lambda: ready.exists() and ready.read_text(), "the master", 60)
        self.info = json.loads(ready.read_text())
        self.token = (work / "master" / "admin.token").read_text().strip()
        self.out = work / "out"
        for n in (1, 2):
            self._daemon(
                f"worker-{n}",
                [
                    "worker",
                    "--master",
                    self.info["grpc"],
                    "--id",
                    f"worker-{n}",
                    "--workdir",
                    str(work / f"worker-{n}"),
                    "--join",
                    self._join("worker"),
                ],
                env={"IOT_OUT": str(self.out)},
            )
        for site in SITES:
            self.start_agent(site, join=True)

    def _join(self, role: str) -> str:
        from headwater.cloud.master import join_token_on_host

        return join_token_on_host(self.work / "master", role, self.info, ttl_s=600)

    def _daemon(self, name: str, args: list[str], env: dict[str, str] | None = None) -> Any:
        from headwater.common.runtime._procs import spawn

        proc = spawn(["-m", "headwater", *args], env=env, log_path=str(self.work / f"{name}.log"))
        self.procs.append(proc)
        return proc

    def start_agent(self, site: str, join: bool = False) -> None:
        args = ["agent", "--master", self.info["grpc"], "--id", f"gw-{site}", "--label"]
        args += [f"site={site}", "--mqtt", f"127.0.0.1:{self.port}", "--topic"]
        args += [f"sensors/{site}/#", "--workdir", str(self.work / f"gw-{site}")]
        self.agents[site] = self._daemon(
            f"gw-{site}", args + (["--join", self._join("agent")] if join else [])
        )

    def start_agents(self) -> None:
        for site in SITES:
            self.start_agent(site)

    def stop_agents(self) -> None:
        from headwater.common.runtime._procs import terminate

        terminate(list(self.agents.values()))

    def submit(self) -> None:
        from headwater.common._package import build_package

        def online() -> bool:
            req = urllib.request.Request(
                f"{self.info['http']}/api/v1/nodes",
                headers={"Authorization": f"Bearer {self.token}"},
            )
            nodes = json.loads(urllib.request.urlopen(req, timeout=10).read())
            return len([n for n in nodes if n["online"]]) == 4

        _until(online, "the workers and agents attaching", 120)
        data, entry = build_package(str(ROOT / "examples" / "iot" / "pipeline.py"))
        req = urllib.request.Request(
            f"{self.info['http']}/api/v1/topologies?{urlencode({'entry': entry, 'containers': 2})}",
            data=data,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        urllib.request.urlopen(req, timeout=60).read()

    def publish(self, count: int, first: int) -> None:
        for site in SITES:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "headwater",
                    "sensors",
                    "--broker",
                    f"127.0.0.1:{self.port}",
                    *_sensors_args(site, count, first),
                    "--client-id",
                    f"bench-{site}",
                ],
                capture_output=True,
                check=True,
                timeout=600,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
            )

    def landed(self) -> int:
        from headwater.common.connectors import manifests

        return sum(m["rows"] for m in manifests(self.out / "landing", "readings"))

    def memory(self) -> dict[str, float]:
        import psutil

        out = {}
        for proc in self.procs:
            try:
                p = psutil.Process(proc.pid)
                tree = [p, *p.children(recursive=True)]
                out[_name(p)] = sum(q.memory_info().rss for q in tree) / 2**20
            except psutil.Error:
                continue
        return out

    def close(self) -> None:
        from headwater.common.runtime._procs import terminate

        terminate(self.procs)


def _name(p: Any) -> str:
    args = p.cmdline()
    if "mosquitto" in args[0]:
        return "mosquitto"
    role = args[args.index("headwater") + 1]
    return f"{role} {args[args.index('--id') + 1]}" if "--id" in args else role


def bare_run(args: argparse.Namespace) -> dict[str, Any]:
    work = Path(tempfile.mkdtemp(prefix="hw-bench-bare-"))
    bare = Bare(work)
    out: dict[str, Any] = {}
    try:
        bare.submit()
        bare.publish(10, 0)
        _until(lambda: bare.landed() >= 60, "the first readings to land")
        time.sleep(20)  # at rest
        out["rest_mib"] = bare.memory()
        out["throughput_per_s"] = _throughput(
            args,
            stop=bare.stop_agents,
            publish=bare.publish,
            start=bare.start_agents,
            landed=bare.landed,
            before=60,
        )
    finally:
        bare.close()
    return out


def _version() -> str:
    found = re.search(r'^version = "(.*)"$', (ROOT / "pyproject.toml").read_text(), re.M)
    assert found is not None
    return found.group(1)


def run(args: argparse.Namespace) -> int:
    result = {"bare": bare_run(args), "compose": compose_run(args)}
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    for setup, figures in result.items():
        rates = figures["throughput_per_s"]
        print(f"{setup}: median {statistics.median(rates)} readings/s over {rates}")
    return 0
