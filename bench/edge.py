"""Edge to cloud: end-to-end latency, catch-up after a cut link, and the agent's memory.

Real daemons on this machine: an MQTT broker, ``headwater master``, one
``headwater worker`` and one ``headwater agent`` that reaches the master
through a loopback proxy the benchmark can cut. Sensors publish JSON
readings stamped with their publish time at a steady ``--rate``; the edge
subgraph (``bench/edge_topology.py``) parses them and the cloud lands them
in a transactional file sink, a part file per cloud checkpoint.

* latency: publish -> the row visible in a committed part file at the cloud
  (polled every 20 ms), for each checkpoint interval in ``--intervals``
  (both domains use it; ``EDGE/CLOUD`` sets them apart: the agent's topology
  master runs the edge domain, the master's the cloud's), side by side; with
  ``--trace``, where each reading's time went, leg by leg
  (``where_the_time_went``);
* catch-up: the link is cut for ``--cut`` seconds while the sensors go on;
  after it returns, the time until the uplink is up again (``reconnect_s``:
  to its first answer from the receiver, from the edge container's log), and
  the backlog (every reading published during the cut) is timed from then
  until it has landed: rows per second, and as a multiple of ``--rate``;
* the agent's peak RSS: the daemon alone, its edge processes (container
  and instances) and both together, sampled every 0.5 s through all of it,
  and the most processes under it; ``--footprint normal,small,single`` measures
  each tree with those agent footprints (``headwater agent --footprint``);
* the master's CPU time (user + system, from /proc/PID/stat) per 1,000
  readings while they flow at the steady rate: what edge traffic costs the
  control plane; and, where the master counts them (``/api/v1/traffic``),
  the bytes its gRPC server took and gave per reading.

``--tree PATH`` runs the daemons from another checkout (``PYTHONPATH=PATH``;
PATH is a repository root, e.g. a ``git worktree`` of an older commit);
repeat it to measure several trees one after the other in one run, side by
side (``--tree .`` is this one). The agent goes through the proxy for the
master and, where its tree has ``--ingress-proxy``, for the data path too.
"""

from __future__ import annotations

import argparse
import calendar
import contextlib
import json
import os
import re
import statistics
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import paho.mqtt.client as mqtt
import psutil
from paho.mqtt.enums import CallbackAPIVersion

from headwater._demo.linkproxy import LinkProxy
from headwater._demo.run import get_json, start_broker, wait_until
from headwater.cloud.master import join_token_on_host
from headwater.common._package import build_package
from headwater.common._ports import free_ports
from headwater.common.runtime._procs import spawn, terminate

TOPOLOGY = Path(__file__).with_name("edge_topology.py")
RESULTS = Path(__file__).with_name("results") / "edge.json"
SENSORS = 10


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=float, default=500.0, help="readings per second (all sensors)")
    p.add_argument("--duration", type=float, default=30.0, help="steady seconds per interval")
    p.add_argument(
        "--intervals",
        default="1,0.25",
        help="checkpoint intervals to compare (s), both domains; EDGE/CLOUD sets them apart",
    )
    p.add_argument(
        "--cut", type=float, default=60.0, help="seconds the link is down (0: no cut, no catch-up)"
    )
    p.add_argument("--out", type=Path, default=RESULTS)
    p.add_argument(
        "--tree",
        action="append",
        default=None,
        metavar="PATH",
        help="run the daemons from this checkout (PYTHONPATH=PATH); repeat to compare trees "
        "side by side (default: this one)",
    )
    p.add_argument(
        "--links",
        default="tls",
        help="comma-separated link modes to measure each tree in: tls, insecure",
    )
    p.add_argument(
        "--trace",
        action="store_true",
        help="rows carry when the ingest, the edge and the cloud saw them: where the time went",
    )
    p.add_argument(
        "--footprint",
        default="normal",
        help="comma-separated agent footprints to measure each tree in: normal, small, single "
        "(headwater agent --footprint)",
    )
    p.add_argument(
        "--repeat", type=int, default=1, help="runs of every tree and mode, interleaved (medians)"
    )


class Landing:
    """Polls the sink's committed part files; notes when each row first became visible."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.seen: set[str] = set()
        self.arrived: dict[tuple[str, int], tuple[int, float]] = {}  # -> (sent_ms, seen_ms)
        # --trace: (received_ms, edge_ms, cloud_ms, cloud checkpoint of its part file)
        self.traced: dict[tuple[str, int], tuple[float, float, float, int]] = {}
        self.duplicates = 0
        self.scored = 0  # rows a model scored (BENCH_SCORE)
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.stop.wait(0.02):
            if not self.out.exists():
                continue
            for f in sorted(self.out.glob("part-*.jsonl")):
                if f.name in self.seen:
                    continue
                now = time.time() * 1000
                self.seen.add(f.name)
                checkpoint = int(f.name.split("-")[1])
                for line in f.read_text().splitlines():
                    sensor, seq, sent, *trace = json.loads(line)
                    if (sensor, seq) in self.arrived:
                        self.duplicates += 1
                    self.arrived[(sensor, seq)] = (sent, now)
                    if len(trace) == 2:  # BENCH_SCORE: the score and the model version
                        self.scored += trace[1] != ""
                    elif trace:
                        received, edge_ms, cloud_ms = trace
                        self.traced[(sensor, seq)] = (received, edge_ms, cloud_ms, checkpoint)


def publish(port: int, rate: float, first: int, count: int) -> None:
    """``count`` readings at a steady ``rate`` (QoS 1), each stamped with its publish time."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"bench-{first}")
    client.max_inflight_messages_set(1000)
    client.connect("127.0.0.1", port)
    client.loop_start()
    start = time.monotonic()
    last = None
    for i in range(count):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        seq = first + i
        sensor = f"s{seq % SENSORS}"
        body = {"sensor": sensor, "seq": seq, "sent_ms": time.time() * 1000}
        last = client.publish(f"sensors/site0/{sensor}", json.dumps(body), qos=1)
    if last is not None:
        last.wait_for_publish(30)
    client.disconnect()
    client.loop_stop()


def _landed(landing: Landing, count: int, timeout: float) -> None:
    _wait(lambda: len(landing.arrived) >= count, timeout)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used (Linux: /proc/PID/stat)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def grpc_bytes(http: str, token: str) -> int | None:
    """Bytes the master's gRPC server took and gave, all methods (None: it does not count)."""
    try:
        view = get_json(f"{http}/api/v1/traffic", token)
        return int(view["bytes_in"]) + int(view["bytes_out"])
    except (OSError, KeyError, ValueError):
        return None


def _tree_env(tree: str | None) -> dict[str, str]:
    return {"PYTHONPATH": str(Path(tree).resolve())} if tree else {}


def _cli_text(tree: str | None) -> str:
    """The tree's command line, all of its modules."""
    folder = Path(tree or Path(__file__).resolve().parent.parent) / "headwater"
    return "".join(p.read_text() for p in sorted(folder.glob("_*cli.py")))


def _has_enrolment(tree: str | None) -> bool:
    """Whether the tree's nodes enrol with ``--join`` (mutual TLS on every link)."""
    return "--join" in _cli_text(tree)


def _has_ingress_proxy(tree: str | None) -> bool:
    """Whether the tree's agent takes ``--ingress-proxy`` (its uplink goes to the workers)."""
    return "--ingress-proxy" in _cli_text(tree)


def _has_footprint(tree: str | None) -> bool:
    """Whether the tree's agent takes ``--footprint`` (issue 20)."""
    return "--footprint" in _cli_text(tree)


def _logs_each_checkpoint_at_debug(tree: str | None) -> bool:
    """Whether the tree logs each checkpoint at DEBUG (an INFO summary a minute instead)."""
    folder = Path(tree or Path(__file__).resolve().parent.parent)
    return "SUMMARY_S" in (folder / "common" / "control" / "_checkpoints.py").read_text()


class EdgeCluster:
    def __init__(
        self,
        work: Path,
        broker_port: int,
        interval: tuple[float, float],
        tree: str | None = None,
        insecure: bool = False,
        trace: bool = False,
        footprint: str = "normal",
        env: dict[str, str] | None = None,
        package: tuple[bytes, str] | None = None,
        status_page: bool = True,
        agent_args: tuple[str, ...] = (),
    ) -> None:
        """``env``: more for every daemon; ``package``: (zip, entry) to submit instead of
        ``bench/edge_topology.py`` alone; ``status_page``: False runs the agent without
        ``--status-port`` (then ``status()`` is empty and the uplink is not waited for);
        ``agent_args``: more for the agent (its labels, say)."""
        self.work, self.out = work, work / "out"
        extra = env or {}
        work.mkdir(parents=True)
        self.procs: list[Any] = []
        self.tree_env = _tree_env(tree)
        ready = work / "master.json"
        enrols = _has_enrolment(tree)
        links = ["--insecure"] if insecure else []
        # the cloud domain's topology master runs in the master, the edge's in the agent:
        # each reads its interval from the topology file, so each daemon is given its own
        edge_interval, cloud_interval = interval
        env = {"BENCH_OUT": str(self.out), "BENCH_INTERVAL": str(cloud_interval), **extra}
        env["BENCH_TRACE"] = "1" if trace else "0"
        if trace and _logs_each_checkpoint_at_debug(tree):  # where_the_time_went reads them
            env["HEADWATER_LOG_LEVEL"] = "INFO,headwater.tmaster.checkpoints=DEBUG"
        os.environ["BENCH_TRACE"] = env["BENCH_TRACE"]  # the package is built here
        join_port, grpc_port, http_port, self.status_port = free_ports(4)
        self._spawn(
            "master",
            "master",
            *links,
            *(["--join-port", str(join_port)] if enrols and not insecure else []),
            "--host",
            "127.0.0.1",
            "--port",
            str(grpc_port),
            "--http-port",
            str(http_port),
            "--state-dir",
            str(work / "master"),
            "--ready-file",
            str(ready),
            "--no-advertise",
            env=env,
        )
        info = _wait(lambda: ready.exists() and json.loads(ready.read_text()), 30)

        def join(role: str) -> list[str]:
            if insecure or not enrols:
                return links
            return ["--join", join_token_on_host(work / "master", role, info, ttl_s=3600)]

        self.http = info["http"]
        # the admin token its first start made (a tree from before tokens has none)
        admin = work / "master" / "admin.token"
        self.token = admin.read_text().strip() if admin.exists() else ""
        self.master_pid = int(info["pid"])
        self.proxy = LinkProxy(info["grpc"])
        via = ["--ingress-proxy", self.proxy.address] if _has_ingress_proxy(tree) else []
        self._spawn(
            "worker",
            "worker",
            "--master",
            info["grpc"],
            "--id",
            "w1",
            "--workdir",
            str(work / "w1"),
            *join("worker"),
            env=env,
        )
        env = {**env, "BENCH_INTERVAL": str(edge_interval)}
        self.agent = self._spawn(
            "agent",
            "agent",
            "--master",
            self.proxy.address,
            "--id",
            "gw",
            "--mqtt",
            f"127.0.0.1:{broker_port}",
            "--workdir",
            str(work / "gw"),
            *(["--status-port", str(self.status_port)] if status_page else []),
            *via,
            *join("agent"),
            *(["--footprint", footprint] if footprint != "normal" else []),
            *agent_args,
            env=env,
        )
        _wait(
            lambda: (
                len([n for n in get_json(f"{self.http}/api/v1/nodes", self.token) if n["online"]])
                == 2
            ),
            30,
        )
        data, entry = package or build_package(str(TOPOLOGY))
        query = urlencode({"entry": entry, "containers": 1})
        req = urllib.request.Request(
            f"{self.http}/api/v1/topologies?{query}",
            data=data,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"} if self.token else {},
        )
        urllib.request.urlopen(req, timeout=60).close()
        if status_page:
            _wait(lambda: self.status()["metrics"].get("uplink_connected") == 1.0, 60)
        self.peak = {"daemon": 0, "tree": 0, "edge": 0}
        self.processes = 0  # the most processes under the agent at a sample
        self._stop = threading.Event()
        threading.Thread(target=self._sample, daemon=True).start()

    def _spawn(self, name: str, *args: str, env: dict[str, str] | None = None) -> Any:
        p = spawn(
            ["-m", "headwater", *args],
            env={**self.tree_env, **(env or {})},
            log_path=str(self.work / f"{name}.log"),
            cwd=str(self.work),  # not the caller's folder: `python -m` would import from it
        )
        self.procs.append(p)
        return p

    def status(self) -> dict[str, Any]:
        try:
            return get_json(f"http://127.0.0.1:{self.status_port}/status")  # type: ignore[no-any-return]
        except OSError:
            return {"metrics": {}}

    def _sample(self) -> None:
        proc = psutil.Process(self.agent.pid)
        while not self._stop.wait(0.5):
            try:
                own = proc.memory_info().rss
                under = proc.children(recursive=True)
                edge = sum(c.memory_info().rss for c in under)
            except psutil.NoSuchProcess:
                return
            self.peak["daemon"] = max(self.peak["daemon"], own)
            self.peak["edge"] = max(self.peak["edge"], edge)
            self.peak["tree"] = max(self.peak["tree"], own + edge)
            self.processes = max(self.processes, len(under))

    def stop(self) -> None:
        self._stop.set()
        terminate(list(reversed(self.procs)), 15.0)
        self.proxy.close()


_DONE = re.compile(
    r"ts=(\S+)Z .*logger=headwater.tmaster(?:\.checkpoints)? "
    r'msg="checkpoint (\d+) complete in (\d+) ms'
)


def _checkpoints(log: Path) -> dict[int, tuple[float, float]]:
    """A topology master's checkpoints from its log: id -> (started, completed), epoch ms."""
    out: dict[int, tuple[float, float]] = {}
    for m in _DONE.finditer(log.read_text()):
        stamp, ms = m.group(1), int(m.group(3))
        t = calendar.timegm(time.strptime(stamp[:19], "%Y-%m-%dT%H:%M:%S"))
        done = (t + float(stamp[19:] or 0)) * 1000
        out[int(m.group(2))] = (done - ms, done)
    return out


def where_the_time_went(cluster: EdgeCluster, landing: Landing) -> dict[str, Any]:
    """Medians and p99s of each leg of a traced reading's path (``--trace``), in ms.

    ingest: publish to the agent's ingest writer taking it (MQTT); to_edge: from there to
    the edge's ``stamp`` (synced append, the spout's read); edge_barrier: to the start of the
    first edge checkpoint after it; edge_checkpoint: that checkpoint's round trip through the
    edge topology master (the outbox sink publishes on its commit); uplink: from its
    completion to the cloud seeing the row (outbox, uplink, ingress, receiver); cloud_barrier:
    to the start of the cloud checkpoint whose part file holds it; cloud_checkpoint: that one's
    round trip; publish_seen: from its completion to the bench seeing the part file (the
    sink's rename on commit, the 20 ms poll)."""
    edge = _checkpoints(cluster.work / "agent.log")
    cloud = _checkpoints(cluster.work / "master.log")
    starts = sorted((s, c) for c, (s, _) in edge.items())
    legs: dict[str, list[float]] = {}
    for key, (received, edge_ms, cloud_ms, cp) in landing.traced.items():
        sent, seen = landing.arrived[key]
        after = [(s, c) for s, c in starts if s >= edge_ms]
        if not after or cp not in cloud:
            continue
        e_start, e_done = edge[after[0][1]]
        c_start, c_done = cloud[cp]
        for name, value in (
            ("ingest", received - sent),
            ("to_edge", edge_ms - received),
            ("edge_barrier", e_start - edge_ms),
            ("edge_checkpoint", e_done - e_start),
            ("uplink", cloud_ms - e_done),
            ("cloud_barrier", c_start - cloud_ms),
            ("cloud_checkpoint", c_done - c_start),
            ("publish_seen", seen - c_done),
            ("total", seen - sent),
        ):
            legs.setdefault(name, []).append(value)
    return {
        name: {"p50": round(_pct(v, 50), 1), "p99": round(_pct(v, 99), 1)}
        for name, v in legs.items()
    }


def _uplink_up_ms(cluster: EdgeCluster) -> float:
    """When the edge container's uplink last came up (its log line), in epoch ms."""
    log = cluster.work / "gw" / "edgebench" / "container-0" / "container.log"
    # "uplink of 'COMPONENT' to ADDRESS up" (before issue 14: "uplink to ADDRESS up")
    ups = [line for line in log.read_text().splitlines() if _UP.search(line)]
    stamp = ups[-1][:23]  # "2026-11-21 11:08:20,438"
    base = time.mktime(time.strptime(stamp[:19], "%Y-%m-%d %H:%M:%S"))
    return (base + int(stamp[20:23]) / 1000) * 1000


_UP = re.compile(r"uplink (of \S+ )?to \S+ up$")


def _wait(cond: Any, timeout: float) -> Any:
    return wait_until(cond, "a benchmark condition", timeout)


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100)[int(q) - 1] if len(values) > 1 else values[0]


LINKS = ("tls", "insecure")
FOOTPRINTS = ("normal", "small", "single")


def run(args: argparse.Namespace) -> int:
    trees: list[str | None] = list(args.tree) if args.tree else [None]
    modes = [m.strip() for m in args.links.split(",") if m.strip()]
    footprints = [f.strip() for f in args.footprint.split(",") if f.strip()]
    if not modes or set(modes) - set(LINKS) or args.repeat < 1:
        print(f"--links takes {', '.join(LINKS)} (comma-separated); --repeat 1 or more")
        return 2
    if not footprints or set(footprints) - set(FOOTPRINTS):
        print(f"--footprint takes {', '.join(FOOTPRINTS)} (comma-separated)")
        return 2
    runs: dict[str, list[dict[str, Any]]] = {}
    for i in range(args.repeat):
        for tree in trees:
            # interleaved: tls first in odd repetitions, insecure first in even ones
            for mode in modes if i % 2 == 0 else list(reversed(modes)):
                for fp in footprints if i % 2 == 0 else list(reversed(footprints)):
                    if fp != "normal" and not _has_footprint(tree):
                        print(f"== {tree}: its agent has no --footprint; not measured {fp}")
                        continue
                    label = str(Path(tree).resolve()) if tree else "this tree"
                    if len(modes) > 1 or mode != "tls":
                        label = f"{label} ({mode})"
                    if len(footprints) > 1 or fp != "normal":
                        label = f"{label} (--footprint {fp})"
                    print(f"== {label}, run {i + 1} of {args.repeat}", flush=True)
                    runs.setdefault(label, []).append(run_tree(args, tree, mode == "insecure", fp))
    results: dict[str, Any] = {
        label: rs[0] if len(rs) == 1 else {"median": _median_run(rs), "runs": rs}
        for label, rs in runs.items()
    }
    if len(results) > 1:
        print("\nside by side" + (" (medians):" if args.repeat > 1 else ":"))
        for label, res in results.items():
            r = res.get("median", res)
            latency = {k: (v["p50_ms"], v["p99_ms"]) for k, v in r["latency"].items()}
            catch_up = r.get("catch_up", {}).get("catch_up_rows_per_s", "-")
            reconnect = r.get("catch_up", {}).get("reconnect_s", "-")
            print(
                f"  {label}: latency p50/p99 ms {latency}; uplink up {reconnect} s after the "
                f"link; catch-up {catch_up} rows/s; "
                f"master CPU per 1,000 readings {r['master_cpu_ms_per_1000_readings']} ms; "
                f"agent CPU {r['agent_cpu_ms_per_1000_readings']} ms; "
                f"master I/O per reading {r['master_io_bytes_per_reading']} bytes; "
                f"agent peak RSS MB {r.get('agent_peak_rss_mb')}; "
                f"processes under the agent {r.get('agent_processes')}"
            )
    out: dict[str, Any] = results if len(results) > 1 else results[next(iter(results))]
    print(json.dumps(out, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2) + "\n")
    return 0


def _median_run(runs: list[Any]) -> Any:
    """The median of every number in ``runs`` (results of one shape), key by key."""
    first = runs[0]
    if isinstance(first, dict):
        return {k: _median_run([r[k] for r in runs if k in r]) for k in first}
    numbers = [r for r in runs if isinstance(r, int | float) and not isinstance(r, bool)]
    return round(statistics.median(numbers), 2) if numbers else first


def agent_cpu_s(cluster: EdgeCluster) -> float:
    """CPU seconds of the agent and its edge processes (container, instances) so far."""
    proc = psutil.Process(cluster.agent.pid)
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        with contextlib.suppress(psutil.Error):
            t = p.cpu_times()
            total += t.user + t.system
    return total


def run_tree(
    args: argparse.Namespace, tree: str | None, insecure: bool = False, footprint: str = "normal"
) -> dict[str, Any]:
    tmp = Path(tempfile.mkdtemp(prefix="hw-bench-edge-"))
    port, broker, kind = start_broker(tmp)
    results: dict[str, Any] = {
        "rate": args.rate,
        "broker": kind,
        "links": "insecure" if insecure else "tls",
        "footprint": footprint,
        "latency": {},
    }
    cpu: dict[str, float] = {}
    agent_cpu: dict[str, float] = {}
    io: dict[str, float | None] = {}
    try:
        for n, spec in enumerate(args.intervals.split(",")):
            edge_s, _, cloud_s = spec.partition("/")
            pair = (float(edge_s), float(cloud_s or edge_s))
            interval = f"{pair[0]:g} s" + (f" (cloud {pair[1]:g} s)" if pair[1] != pair[0] else "")
            cluster = EdgeCluster(
                tmp / f"run-{n}", port, pair, tree, insecure, args.trace, footprint
            )
            landing = Landing(cluster.out)
            try:
                count = int(args.rate * args.duration)
                first = n * 10_000_000
                cpu_before = cpu_s(cluster.master_pid)
                agent_before = agent_cpu_s(cluster)
                io_before = grpc_bytes(cluster.http, cluster.token)
                publish(port, args.rate, first, count)
                _landed(landing, count, 120)
                cpu[f"checkpoints every {interval}"] = round(
                    (cpu_s(cluster.master_pid) - cpu_before) * 1000 / count * 1000, 1
                )
                agent_cpu[f"checkpoints every {interval}"] = round(
                    (agent_cpu_s(cluster) - agent_before) * 1000 / count * 1000, 1
                )
                io_after = grpc_bytes(cluster.http, cluster.token)
                io[f"checkpoints every {interval}"] = (
                    None
                    if io_before is None or io_after is None
                    else round((io_after - io_before) / count, 2)
                )
                lat = [seen - sent for sent, seen in landing.arrived.values()]
                span_ms = max(seen for _, seen in landing.arrived.values()) - min(
                    sent for sent, _ in landing.arrived.values()
                )
                row: dict[str, Any] = {
                    "rows": len(lat),
                    "rows_per_s": round(len(lat) / (span_ms / 1000)),
                    "p50_ms": round(_pct(lat, 50), 1),
                    "p99_ms": round(_pct(lat, 99), 1),
                    "max_ms": round(max(lat), 1),
                    "duplicates": landing.duplicates,
                }
                if args.trace:
                    row["where_ms"] = where_the_time_went(cluster, landing)
                results["latency"][f"checkpoints every {interval}"] = row
                print(
                    f"interval {interval}: {row}; master CPU "
                    f"{cpu[f'checkpoints every {interval}']} ms per 1,000 readings, I/O "
                    f"{io[f'checkpoints every {interval}']} bytes per reading",
                    flush=True,
                )
                if n == 0 and args.cut > 0:
                    results["catch_up"] = _catch_up(args, cluster, landing, port, first + count)
                    print(f"catch-up: {results['catch_up']}", flush=True)
                results.setdefault("agent_peak_rss_mb", {})[interval] = {
                    k: round(v / 2**20, 1) for k, v in cluster.peak.items()
                }
                results.setdefault("agent_processes", {})[interval] = cluster.processes
            finally:
                landing.stop.set()
                cluster.stop()
    finally:
        terminate([broker], 5.0)
    results["master_cpu_ms_per_1000_readings"] = cpu
    results["agent_cpu_ms_per_1000_readings"] = agent_cpu
    results["master_io_bytes_per_reading"] = io
    return results


def _catch_up(
    args: argparse.Namespace, cluster: EdgeCluster, landing: Landing, port: int, first: int
) -> dict[str, Any]:
    before = len(landing.arrived)
    cut_from = first
    cluster.proxy.cut()
    count = int(args.rate * args.cut)
    publish(port, args.rate, first, count)  # the sensors go on for the whole cut
    backlog = cluster.status()
    cluster.proxy.restore()
    restored, restored_ms = time.monotonic(), time.time() * 1000
    # time the reconnect apart: from the link's return to the uplink's first answer from the
    # receiver (its "up" log line; batches follow on the same stream at once), and to the
    # agent's report of it (which lags by up to its 1 s heartbeat)
    _wait(lambda: cluster.status()["metrics"].get("uplink_connected") == 1.0, 60)
    reported = time.monotonic()
    _landed(landing, before + count, 600)
    backlog_seen = [seen for (_s, seq), (_sent, seen) in landing.arrived.items() if seq >= cut_from]
    up_ms = _uplink_up_ms(cluster)
    drain_s = (max(backlog_seen) - up_ms) / 1000
    rows_per_s = round(count / drain_s)
    return {
        "cut_s": args.cut,
        "backlog_rows": count,
        "backlog_batches_at_restore": backlog.get("backlog_batches"),
        "backlog_bytes_at_restore": backlog.get("backlog_bytes"),
        "reconnect_s": round((up_ms - restored_ms) / 1000, 2),
        "reconnect_reported_s": round(reported - restored, 2),
        "first_backlog_row_s": round((min(backlog_seen) - restored_ms) / 1000, 2),
        "uplink_up_to_last_row_s": round(drain_s, 2),
        "catch_up_rows_per_s": rows_per_s,
        "catch_up_x_ingest": round(rows_per_s / args.rate, 1),
        "duplicates": landing.duplicates,
    }
