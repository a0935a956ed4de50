"""The web console on a large topology: first render and per-update cost in Chromium.

A synthetic topology (``tests/console/_synthetic.py``: ``--components``
components, a fifth on the edge on ``--agents`` agents) goes through the
console's own modules in headless Chromium (Debian's ``chromium``), served by
a real master: each of ``--updates`` snapshots, one a second's worth of
counters apart, is parsed from its JSON text, turned into rates and given to
the topology view (DAG, component detail, edit form), with the layout it
causes forced. Figures are medians over ``--runs`` fresh pages: the first
render, the median and 95th percentile of the updates, the snapshot's size.

The master's side: a real ``Master`` (in this process) with the same shape of
topology submitted (loaded in a child as any submission; no worker runs it),
every task given metrics and ``--agents`` agents given status reports with the
edge components' counters; the figure is the median time to build one
snapshot of it and encode it as the stream does (once per tick per watched
topology, however many tabs watch).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from bench.console_history import draw_costs, master_costs
from headwater.cloud.console._snapshot import snapshot
from headwater.cloud.master._master import Master
from headwater.cloud.master._nodes import NodeRecord
from headwater.common._package import build_package
from headwater.common.console._routes import _event
from headwater.common.wire.proto import runtime_pb2 as pb
from tests.console._synthetic import WIDTH, measure, snapshots
from tests.integration._daemons import Daemons

RESULTS = Path(__file__).with_name("results") / "console.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--components", type=int, default=200)
    p.add_argument("--agents", type=int, default=50)
    p.add_argument("--updates", type=int, default=60, help="snapshots per run")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--out", type=Path, default=RESULTS)


def _browser(profile: Path) -> webdriver.Chrome:
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1500,1000",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(arg)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


_FILE = """
from headwater import Bolt, Spout, Topology, shuffle
from headwater.placement import edge


class Src(Spout):
    outputs = ("v",)

    def open(self, ctx):
        self.ctx = ctx

    def next_tuple(self):
        pass


class Step(Bolt):
    outputs = ("v",)

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        self.ctx.emit(list(tup.values))


topology = Topology("big")
"""


def _topology_file(components: int) -> str:
    """The shape of ``_synthetic.snapshots``' topology as a file the master can load."""
    chains = max(1, components // 5 // 4)
    lines = [_FILE]
    for i in range(chains):
        prev = f"e{i}_src"
        lines.append(f"topology = topology.add_spout({prev!r}, Src, placement=edge())")
        for step in "abc":
            name = f"e{i}_{step}"
            lines.append(
                f"topology = topology.add_bolt({name!r}, Step, "
                f"inputs={{{prev!r}: shuffle()}}, placement=edge())"
            )
            prev = name
    for j in range(components - 4 * chains):
        layer, pos = divmod(j, WIDTH)
        if layer == 0:
            inputs = [f"e{pos % chains}_c"]
        else:
            inputs = sorted({f"c{layer - 1}_{pos}", f"c{layer - 1}_{(pos + 1) % WIDTH}"})
        joined = ", ".join(f"{x!r}: shuffle()" for x in inputs)
        lines.append(
            f"topology = topology.add_bolt('c{layer}_{pos}', Step, parallelism=2, "
            f"inputs={{{joined}}})"
        )
    return "\n".join(lines) + "\n"


async def _master_side(
    work: Path, components: int, agents: int, samples: int
) -> tuple[list[float], dict[str, Any]]:
    """Milliseconds to build and encode one snapshot of the big topology (with the rates of
    its history, full), ``samples`` times; and the history's costs (``console_history``)."""
    (work / "code").mkdir()
    file = work / "code" / "big.py"
    file.write_text(_topology_file(components))
    master = Master(work / "state")
    data, entry = build_package(file)
    await master.submit(data, entry, 8)
    tm = master.tms["big"]
    for inst in tm.plan.instances:
        tm.metrics[f"task:{inst.task_id}"] = {
            "emitted": 1000.0,
            "executed": 1000.0,
            "backpressure_ms": 10.0,
            "pending": 3.0,
            "execute_latency_us": 150.0,
        }
    whole = master.described(tm.revlog.records[0].package, entry)
    assert whole is not None
    edge = [c.name for c in whole.components if c.placement.is_edge]
    for a in range(agents):
        node = f"gw-{a:02d}"
        status = pb.NodeStatus(health="ok", backlog_bytes=1000 * a)
        status.metrics["revision:big"] = 1.0
        for c in edge:
            for k in ("emitted", "executed", "exceptions", "dead_letters"):
                status.metrics[f"component:big/{c}:{k}"] = 1000.0
        master.nodes.records[node] = NodeRecord(
            pb.NodeInfo(node_id=node, kind="agent"), queue=asyncio.Queue(), status=status
        )
        master.deployments["big"].agents.append(node)
    costs: list[float] = []
    plain: list[float] = []  # the same without the history's rates, alternately
    try:
        history, full = master_costs(master, "big", edge)
        for _ in range(samples):
            for kept, given in ((costs, full), (plain, None)):
                t0 = time.perf_counter()
                _event("snapshot", snapshot(master, "big", given))
                kept.append((time.perf_counter() - t0) * 1000)
    finally:
        for task in master._coordinators.values():
            task.cancel()
    history["snapshot_without_rates_median_ms"] = round(statistics.median(plain), 1)
    return costs, history


def run(args: argparse.Namespace) -> int:
    with tempfile.TemporaryDirectory(prefix="hw-bench-console-master-") as tmp:
        master_ms, history = asyncio.run(_master_side(Path(tmp), args.components, args.agents, 50))
    answer = history.pop("answer")
    texts = snapshots(args.components, args.agents, args.updates)
    firsts: list[float] = []
    medians: list[float] = []
    p95s: list[float] = []
    draws: list[float] = []
    loads = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="hw-bench-console-") as tmp:
        daemons = Daemons(Path(tmp))
        try:
            daemons.start_master()
            for i in range(args.runs):
                driver = _browser(Path(tmp) / f"chromium-{i}")
                try:
                    result = measure(driver, daemons.http + "/", texts)
                    drawn = draw_costs(driver, daemons.http + "/", answer, history["component"])
                finally:
                    driver.quit()
                updates = sorted(result["update_ms"])
                firsts.append(result["first_ms"])
                medians.append(statistics.median(updates))
                p95s.append(updates[int(0.95 * (len(updates) - 1))])
                draws.append(statistics.median(drawn["costs"]))
                loads.append(os.getloadavg()[0])
        finally:
            daemons.stop()
    results = {
        "components": args.components,
        "agents": args.agents,
        "updates_per_run": args.updates,
        "runs": args.runs,
        "snapshot_bytes": len(texts[-1]),
        "first_render_ms": round(statistics.median(firsts), 1),
        "update_median_ms": round(statistics.median(medians), 1),
        "update_p95_ms": round(statistics.median(p95s), 1),
        "master_snapshot_median_ms": round(statistics.median(master_ms), 1),
        "master_snapshot_max_ms": round(max(master_ms), 1),
        "history": {
            **history,
            "page_draw_median_ms": round(statistics.median(draws), 1),
        },
        "load_average_1min": [round(x, 1) for x in loads],
        "per_run": {"first": firsts, "median": medians, "p95": p95s, "draw": draws},
    }
    print(json.dumps(results, indent=2))
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    return 0
