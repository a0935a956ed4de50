"""Fleet: N simulated agents against one master (enrol, attach, status, an order, a restart).

A real ``headwater master`` (``bench/fleet_master.py``: free loopback ports, its own state
folder, measured from outside with psutil) and N simulated agents in ``--procs`` processes
(``bench/fleet_agents.py`` says what is real and what is simulated: each is its own node on
the wire, with its own key, certificate and mutual TLS session, reusing the node's
``NodeCredentials``, ``MasterSession`` and ``Packages``; agent ``i`` in process ``i % procs``,
at nice 10: on a real fleet the agents are elsewhere). For each N in ``--agents``:

1. enrol: one join token made as an operator makes one (``headwater token create --role
   agent``); every agent enrols with it under its own id. Time to all enrolled.
2. attach: every agent's session starts at once; per agent, the master's ``attached_at``
   (``GET /api/v1/nodes``) less the start; done when all are online there.
3. steady: ``--steady`` seconds of status reports every 2 s; the master's CPU and RSS, and
   the status latency: a report sent -> the master's answer, which comes after the master
   stored it in the registry its REST API reads (``ReportStatus`` is synchronous).
4. order: ``bench/fleet_topology.py`` submitted over the REST API; its edge part selects
   every agent. Per agent, submit -> the master's answer to the first status report that
   says the subgraph runs (its session reports at once after an order, as a node's does); all
   running is checked in the master's view too (``GET .../revisions``: every agent at
   revision 1).
5. failover (``--failover``): ``restart``, the master SIGKILLed and started again on the
   same ports and ``--state-dir``; or ``takeover``, two masters on one ZooKeeper with a
   Garage bucket as their blob store (``bench/fleet_ha.py``; every agent given both
   addresses), the leader SIGKILLed and the standby leading once the leader's ZooKeeper
   session is over. Then the re-attach storm: per agent, the kill -> its first order on a
   new session (a master re-sends its orders when a node attaches) -> the master's answer
   to its first status report sent after that; settled when every agent has one, checked
   in the serving master's view (every agent online, attached since the kill, reporting).

The master is polled (``GET /api/v1/nodes`` or ``.../revisions``) every ``POLL_S`` only in
the phases that wait for it, never in the steady window.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.fleet_ha import Standbys, takeover
from bench.fleet_master import Failover, FleetMaster, kill_and_restart
from bench.fleet_sim import Events, Fleet
from headwater._demo.run import wait_until
from headwater.common._package import zip_package

RESULTS = Path(__file__).with_name("results") / "fleet.json"
TOPOLOGY = Path(__file__).with_name("fleet_topology.py")
POLL_S = 0.5


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1 or max(sizes) > 9999:
        raise argparse.ArgumentTypeError(f"fleet sizes from 1 to 9999, by commas: not {text!r}")
    return sizes


def _positive(text: str) -> float:
    value = float(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"a positive number, not {text!r}")
    return value


def _procs(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 32:
        raise argparse.ArgumentTypeError(f"from 1 to 32 processes, not {text!r}")
    return int(text)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--agents", type=_sizes, default="10,100,1000", help="fleet sizes, one run each")
    p.add_argument("--procs", type=_procs, default=4, help="simulator processes (1 to 32)")
    p.add_argument("--steady", type=_positive, default=30.0, help="seconds of steady status")
    p.add_argument("--timeout", type=_positive, default=600.0, help="the most seconds per phase")
    p.add_argument(
        "--failover",
        choices=("restart", "takeover"),
        default="restart",
        help="the master restarted on its state, or a standby master taking over",
    )
    p.add_argument("--keep", action="store_true", help="keep the work folder (logs, state)")
    p.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="py-spy the master into DIR/N/PHASE.txt",
    )
    p.add_argument("--out", type=Path, default=RESULTS)


def pct(values: list[float], q: float) -> float:
    """The ``q``-th percentile (nearest rank) of ``values``; 0 for none."""
    if not values:
        return 0.0
    s = sorted(values)
    return s[min(len(s) - 1, max(0, round(q / 100 * len(s) + 0.5) - 1))]


def spread(values: list[float]) -> dict[str, float]:
    return {
        "p50": round(pct(values, 50), 3),
        "p99": round(pct(values, 99), 3),
        "max": round(max(values, default=0.0), 3),
    }


def _poll(cond: Any, timeout: float, what: str) -> Any:
    return wait_until(cond, what, timeout, POLL_S)


def _get(master: FleetMaster, path: str) -> Any:
    req = urllib.request.Request(
        master.http + path, headers={"Authorization": f"Bearer {master.token}"}
    )
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.loads(r.read())


def _submit(master: FleetMaster) -> None:
    entry = TOPOLOGY.name  # the file alone: a package of 1 KiB, as a small topology's is
    data = zip_package({entry: TOPOLOGY.read_bytes()})
    req = urllib.request.Request(
        f"{master.http}/api/v1/topologies?{urlencode({'entry': entry, 'containers': 1})}",
        data=data,
        method="POST",
        headers={"Authorization": f"Bearer {master.token}"},
    )
    urllib.request.urlopen(req, timeout=120).close()


def _running(ev: Events) -> dict[int, float]:
    """Each agent's first answered report that says the subgraph runs: when answered."""
    out: dict[int, float] = {}
    for i, _sent, answered, running in ev.reports:
        if running and i not in out:
            out[i] = answered
    return out


def _back(ev: Events, since: float) -> dict[int, tuple[float, float]]:
    """Per agent, after ``since``: its first order (on a new session) and the answer to its
    first report sent after that order."""
    first: dict[int, float] = {}
    for i, t, _which in ev.orders:
        if t >= since and i not in first:
            first[i] = t
    out: dict[int, tuple[float, float]] = {}
    for i, sent, answered, _running in ev.reports:
        if i in first and sent >= first[i] and i not in out:
            out[i] = (first[i], answered)
    return out


class Phases:
    """The master's CPU and memory and the simulator's CPU over each phase, by name."""

    def __init__(self, master: FleetMaster, fleet: Fleet) -> None:
        self.master, self.fleet = master, fleet
        self.t0 = time.time()
        self._sim = 0.0

    def begin(self, name: str) -> float:
        self.master.begin(name)
        self._sim = self.fleet.cpu_s()
        self.t0 = time.time()
        return self.t0

    def end(self) -> dict[str, Any]:
        window = self.master.end()
        wall = time.time() - self.t0
        window["simulator_cores"] = round((self.fleet.cpu_s() - self._sim) / wall, 3)
        return window


def measure(n: int, args: argparse.Namespace) -> dict[str, Any]:
    """One run of every phase with ``n`` agents; its figures."""
    work = Path(tempfile.mkdtemp(prefix="hw-bench-fleet-"))
    standbys = Standbys(work) if args.failover == "takeover" else None
    masters: list[FleetMaster] = []
    fleet: Fleet | None = None
    result: dict[str, Any] = {"agents": n, "procs": min(args.procs, n), "failover": args.failover}
    try:
        t0 = time.monotonic()
        failover: Failover = kill_and_restart
        if standbys is not None:
            standbys.start()
            master, standby = standbys.masters()
            masters += [master, standby]
            failover = takeover(standby)
        else:
            master = FleetMaster(work)
            masters.append(master)
            master.start()
        result["master_start_s"] = round(time.monotonic() - t0, 2)
        for m in masters:
            m.profile = args.profile / str(n) if args.profile is not None else None
        token = master.join_token()
        fleet = Fleet(work, ",".join(m.grpc for m in masters), token, n, args.procs)
        ev, phases = fleet.events, Phases(master, fleet)

        t0 = phases.begin("enrol")
        fleet.send("enrol")
        fleet.wait(lambda e: len(e.enrolled) == n, args.timeout, "every agent enrolled")
        all_s = round(max(ev.enrolled.values()) - t0, 2)
        result["enrol"] = {**phases.end(), "enrolled": len(ev.enrolled), "all_s": all_s}

        t0 = phases.begin("attach")
        fleet.send("attach")
        nodes = _poll(
            lambda: (v := master.nodes()) and sum(x["online"] for x in v) == n and v,
            args.timeout,
            "every agent attached",
        )
        attached = [x["attached_at"] - t0 for x in nodes]
        result["attach"] = {**phases.end(), "online": len(nodes), "attach_s": spread(attached)}

        t0 = phases.begin("steady")
        time.sleep(args.steady)
        t1 = time.time()
        steady = phases.end()
        with fleet.lock:
            lat = [a - s for _, s, a, _ in ev.reports if s >= t0 and a <= t1]
        result["steady"] = {**steady, "reports": len(lat), "status_s": spread(lat)}

        t0 = phases.begin("order")
        _submit(master)
        _poll(
            lambda: len(_get(master, "/api/v1/topologies/fleet/revisions")["agents"]) == n,
            args.timeout,
            "every agent running the order, in the master's view",
        )
        in_view = time.time() - t0
        fleet.wait(lambda e: len(_running(e)) == n, 30, "every agent's running report")
        with fleet.lock:
            order = [t - t0 for t in _running(ev).values()]
            got = {i: t - t0 for i, t, which in reversed(ev.orders) if which == "run"}
            fetched = [t - t0 for t in ev.fetched.values()]
        result["order"] = {
            **phases.end(),
            "running": len(order),
            "order_s": spread(order),
            "order_received_s": spread(list(got.values())),
            "package_fetched_s": spread(fetched),
            "all_running_in_view_s": round(in_view, 2),
        }

        t_kill = phases.begin("storm")
        restart_s, master = failover(master)
        phases.master = master  # the one that serves now
        if master.profile is not None:
            master.spy(master.profile / "storm.txt")  # the new master's
        _poll(
            lambda: (
                sum(
                    x["online"] and x["attached_at"] >= t_kill and x["health"] != "unknown"
                    for x in master.nodes()
                )
                == n
            ),
            args.timeout,
            "every agent attached again and reporting, in the master's view",
        )
        in_view = time.time() - t_kill
        fleet.wait(lambda e: len(_back(e, t_kill)) == n, 30, "every agent's report after")
        with fleet.lock:
            back = _back(ev, t_kill)
        result["storm"] = {
            **phases.end(),
            "restart_s": round(restart_s, 2),
            "back": len(back),
            "reattach_s": spread([o - t_kill for o, _ in back.values()]),
            "reporting_s": spread([a - t_kill for _, a in back.values()]),
            "settled_in_view_s": round(in_view, 2),
        }
        result["load_average"] = [round(x, 2) for x in os.getloadavg()]
    except BaseException:
        print(f"fleet bench: the logs are kept in {work}", file=sys.stderr)
        raise
    else:
        if args.keep:
            print(f"fleet bench: the work folder is {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    finally:
        if fleet is not None:
            fleet.stop()
        for m in masters:
            m.stop()
        if standbys is not None:
            standbys.stop()
    return result


def run(args: argparse.Namespace) -> int:
    if args.profile is not None and shutil.which("py-spy") is None:
        print("--profile samples the master with py-spy: pip install py-spy", file=sys.stderr)
        return 2
    results: dict[str, Any] = {"cpus": os.cpu_count(), "runs": []}
    for n in args.agents:
        load = [round(x, 2) for x in os.getloadavg()]
        r = measure(n, args)
        r["load_average_before"] = load
        results["runs"].append(r)
        print(json.dumps(r, indent=1), flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print("agents  master cores  RSS MiB  attached s  status p50/p99 s  order p50/p99 s  storm s")
    for r in results["runs"]:
        s, o = r["steady"], r["order"]
        print(
            f"{r['agents']:>6}  {s['cores']:>12.3f}  {s['rss_peak_mib']:>7.0f}  "
            f"{r['attach']['attach_s']['max']:>10.2f}  "
            f"{s['status_s']['p50']:>7.3f} / {s['status_s']['p99']:<6.3f}  "
            f"{o['order_s']['p50']:>6.2f} / {o['order_s']['p99']:<6.2f}  "
            f"{r['storm']['reporting_s']['max']:>7.2f}"
        )
    return 0
