"""Moves: request to processing at the new placement, and the pause on the moved path.

Real daemons: an MQTT broker, ``headwater master``, one ``headwater worker`` and one
``headwater agent`` (label ``site=site0``) running ``bench/moves_topology.py``: readings
parsed on the agent, counted per sensor by ``count`` (keyed, its keys' sites declared) in the
cloud, landed in the cloud. Sensors publish at a steady ``--rate`` throughout; each round
moves ``count`` to the edge and back to the cloud through the API (``POST .../move``), each
against the current revision, ``--quiet`` seconds apart. For each move:

* to new placement: the request -> the first row ``count`` handled at its new placement
  (rows carry where they were counted and when);
* to applied: the request -> the cloud's revision applied and the agent at it;
* pause: the longest gap between two rows counted (on the moved path, wherever it ran)
  from the request until the move is applied plus 0.5 s, beside the longest gap in as long
  a quiet stretch before it (checkpoints alone). Moving to the edge the agent's new copy
  waits for its keys (one cloud checkpoint after the fence, then two hops through the
  master); moving back the state rides the fence and nothing waits.

At the end every sensor's counts are checked: 1, 2, 3, ... with none missing or twice.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import tempfile
import threading
import time
import urllib.request
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from bench.edge import EdgeCluster, publish
from headwater._demo.run import get_json, start_broker, wait_until
from headwater.common._package import build_package
from headwater.common.runtime._procs import terminate

RESULTS = Path(__file__).with_name("results") / "moves.json"
TOPOLOGY = Path(__file__).with_name("moves_topology.py")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rate", type=float, default=200.0, help="readings per second")
    p.add_argument("--rounds", type=int, default=3, help="rounds of a move to the edge and back")
    p.add_argument("--interval", type=float, default=1.0, help="checkpoint interval (s)")
    p.add_argument("--quiet", type=float, default=4.0, help="seconds between moves")
    p.add_argument("--out", type=Path, default=RESULTS)


def _rows(out: Path) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for f in sorted(out.glob("part-*.jsonl")) if out.exists() else ():
        rows.extend(json.loads(line) for line in f.read_text().splitlines())
    return rows


def _move(cluster: EdgeCluster, to: str, base: int) -> None:
    query = urlencode({"components": "count", "to": to, "base": base})
    req = urllib.request.Request(
        f"{cluster.http}/api/v1/topologies/movebench/move?{query}",
        method="POST",
        headers={"Authorization": f"Bearer {cluster.token}"},
    )
    urllib.request.urlopen(req, timeout=60).close()


def _applied(cluster: EdgeCluster, rev: int) -> bool:
    view = get_json(f"{cluster.http}/api/v1/topologies/movebench/revisions", cluster.token)
    statuses = {r["revision"]: r["status"] for r in view["revisions"]}
    return statuses.get(rev) == "applied" and view["agents"].get("gw") == rev


def _counted_at(out: Path, where: str, since: float) -> bool:
    return any(r[4] == where and r[5] >= since for r in _rows(out))


def _gap(times: list[float], start: float, end: float) -> float:
    inside = [t for t in times if start <= t <= end]
    return max((b - a for a, b in itertools.pairwise(inside)), default=0.0)


def _check(rows: list[list[Any]]) -> None:
    by_sensor: dict[str, list[list[Any]]] = {}
    for r in rows:
        by_sensor.setdefault(r[0], []).append(r)
    for sensor, mine in by_sensor.items():
        mine.sort(key=lambda r: r[1])
        counts = [r[3] for r in mine]
        if counts != list(range(1, len(mine) + 1)):
            raise RuntimeError(f"{sensor}: counts not 1..{len(mine)} in order: state lost")


def run(args: argparse.Namespace) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="hw-bench-moves-"))
    port, broker, kind = start_broker(tmp)
    package = build_package(str(TOPOLOGY))
    moves: list[dict[str, Any]] = []
    try:
        cluster = EdgeCluster(
            tmp / "run",
            port,
            (args.interval, args.interval),
            package=package,
            agent_args=("--label", "site=site0"),
        )
        try:
            per_move = 10.0 + args.quiet  # a generous budget: the readings outlast the moves
            count = int(args.rate * (args.quiet + 2 * args.rounds * per_move))
            publisher = threading.Thread(target=publish, args=(port, args.rate, 0, count))
            publisher.start()
            wait_until(lambda: len(_rows(cluster.out)) > args.rate, "the first rows", 60)
            rev = 1
            for _ in range(args.rounds):
                for to in ("edge", "cloud"):
                    time.sleep(args.quiet)  # a quiet stretch, measured below
                    t0 = time.time() * 1000
                    _move(cluster, to, rev)
                    rev += 1
                    wait_until(partial(_applied, cluster, rev), f"revision {rev}", 120)
                    t_applied = time.time() * 1000
                    wait_until(partial(_counted_at, cluster.out, to, t0), f"rows at the {to}", 60)
                    moves.append({"to": to, "t0": t0, "applied": t_applied})
            publisher.join(600)
            wait_until(lambda: len(_rows(cluster.out)) >= count, "every reading counted", 120)
            rows = _rows(cluster.out)
            _check(rows)
        finally:
            cluster.stop()
    finally:
        terminate([broker], 5.0)
    times = sorted(r[5] for r in rows)
    results: dict[str, Any] = {"rate": args.rate, "interval_s": args.interval, "broker": kind}
    for to in ("edge", "cloud"):
        mine = [m for m in moves if m["to"] == to]
        first = [min(r[5] for r in rows if r[4] == to and r[5] >= m["t0"]) - m["t0"] for m in mine]
        applied = [m["applied"] - m["t0"] for m in mine]
        pause = [_gap(times, m["t0"], m["applied"] + 500) for m in mine]
        quiet = [_gap(times, 2 * m["t0"] - m["applied"] - 500, m["t0"]) for m in mine]
        results[f"to the {to}"] = {
            "to_new_placement_ms": [round(x) for x in first],
            "to_applied_ms": [round(x) for x in applied],
            "pause_ms": [round(x) for x in pause],
            "quiet_gap_ms": [round(x) for x in quiet],
            "median_to_new_placement_ms": round(statistics.median(first)),
            "median_pause_ms": round(statistics.median(pause)),
            "median_quiet_gap_ms": round(statistics.median(quiet)),
        }
    results["readings"] = len(rows)
    print(json.dumps(results, indent=2))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0
