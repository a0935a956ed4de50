"""Issue 37: a stateless component moved live from the cloud to every agent and back, under a
steady publisher, on a cluster of real processes: every reading counted once at the sink, each
by the copy its agent's placement said at the time."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from headwater._demo.linkproxy import LinkProxy

from .._ports import free_port
from ._daemons import Daemons
from ._support import committed_rows, wait_for
from .test_edge_cloud import SITES, Sensors, SteadySensors, _agent_args, _node

pytestmark = pytest.mark.cluster
TAIL = 30

SOURCE = """
import json
import os
from functools import partial

from headwater import Bolt, Reliability, Topology, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


class Tag(Bolt):
    # stateless: the reading's topic and number, where it was handled, and when the agent
    # took it from the broker (a reading the broker delivered twice is two log records)
    outputs = ("topic", "seq", "where", "received_ms")

    def open(self, ctx):
        self.ctx = ctx
        self.where = "edge" if "HEADWATER_INGEST_LOG" in os.environ else "cloud"

    def process(self, tup):
        topic, payload, received_ms = tup.values
        self.ctx.emit([topic, json.loads(payload)["seq"], self.where, received_ms])


topology = (
    Topology("mover", config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 0.3,
    })
    .add_spout("readings", partial(Readings, LOG, partitions=1), outputs=Readings.outputs,
               placement=edge())
    .add_bolt("tag", Tag, inputs={"readings": shuffle()}, parallelism=2)
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/tagged"), inputs={"tag": shuffle()})
)
"""


def move_component(daemons: Daemons, to: str, base: int, *, topology: str, component: str) -> None:
    """``headwater move`` of one component, against ``base``: applied (the cloud's part)."""
    res = subprocess.run(
        [
            *(sys.executable, "-m", "headwater", "move", topology, component, "--to", to),
            *("--base", str(base), "--master", daemons.http, "--token", daemons.token),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"revision {base + 1} applied" in res.stdout, res.stdout


def agents_at(daemons: Daemons, rev: int, sites: Sequence[str] = SITES, *, topology: str) -> bool:
    """Whether each of ``sites``' agents runs revision ``rev`` of ``topology``."""
    agents = daemons.api(f"/api/v1/topologies/{topology}/revisions")["agents"]
    return all(agents.get(f"gw-{s}") == rev for s in sites)


_move = partial(move_component, topology="mover", component="tag")
_agents_at = partial(agents_at, topology="mover")


def _on_edge(daemons: Daemons) -> set[str]:
    view = daemons.api("/api/v1/topologies/mover")
    return {c["name"] for c in view["edge"]["components"]}


def _where(rows: list[list[Any]], site: str) -> set[Any]:
    return {r[2] for r in rows if str(r[0]).split("/")[1] == site}


def _check(
    rows: list[list[Any]],
    n: int,
    repeats: bool,
    offline: str = "",
    phases: Sequence[str] = ("cloud", "edge", "cloud"),
) -> None:
    """Every log record once, every reading at least once (``repeats``: a reading the broker
    redelivered after an agent's SIGKILL is a second log record, which a stateless pipeline
    keeps, as docs/design.md says of the ingest; otherwise exactly once); on each site the
    cloud's, then the edge's, then the cloud's (``offline``: that site's agent was away during
    both moves, and its readings are the cloud's only)."""
    for site in SITES:
        mine = sorted((r for r in rows if str(r[0]).split("/")[1] == site), key=lambda r: r[1])
        records = [(r[1], r[3]) for r in mine]
        assert len(records) == len(set(records)), f"{site}: a log record handled twice"
        seqs = [r[1] for r in mine]
        if repeats:
            assert sorted(set(seqs)) == list(range(n)), f"{site}: readings missing"
        else:
            assert seqs == list(range(n)), f"{site}: gaps or duplicates"
        runs = [r[2] for i, r in enumerate(mine) if i == 0 or r[2] != mine[i - 1][2]]
        want = [phases[0]] if site == offline else list(phases)
        assert runs == want, f"{site}: handled by {runs}"


@pytest.mark.parametrize("fault", ["", "kill", "offline"], ids=["steady", "kill", "offline"])
def test_a_stateless_component_moves_to_every_agent_and_back_exactly_once(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path, fault: str
) -> None:
    """``tag`` (2 tasks, no state) runs in the cloud; it is moved to both agents while readings
    flow, then back. Each reading is tagged once, by the cloud before its agent's switch, by
    the agent after it, and by the cloud again after the move back. ``kill``: site1's agent is
    SIGKILLed right after the first move is accepted, and started again. ``offline``: site1's
    agent is cut off (its link to the master and its uplink) during both moves: its readings
    wait in its outbox, and when it is back its subgraph at the newest revision is the one it
    runs, so the cloud tags them all."""
    kill, offline = fault == "kill", fault == "offline"
    daemons.start_master()
    proxy = LinkProxy(daemons.grpc)  # site1 reaches the master and the cloud through it
    out = tmp_path / "out"
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    status = {s: free_port() for s in SITES}
    args = {
        s: _agent_args(mosquitto, s, daemons.grpc, "--status-port", str(status[s])) for s in SITES
    }
    args["site1"] = _agent_args(
        mosquitto,
        "site1",
        proxy.address,
        "--status-port",
        str(status["site1"]),
        "--ingress-proxy",
        proxy.address,
    )
    agents = {s: daemons.start_agent(f"gw-{s}", *args[s]) for s in SITES}
    wait_for(
        lambda: len([x for x in daemons.api("/api/v1/nodes") if x["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    code = tmp_path / "code"
    code.mkdir()
    (code / "mover.py").write_text(SOURCE)
    daemons.cli("submit", str(code / "mover.py"))
    sensors = Sensors(*mosquitto)
    n, rate = 1800, 60.0  # per site at most, over about 60 s in all
    messages = [
        (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
        for i in range(n)
        for site in SITES
    ]
    publisher = SteadySensors(sensors, messages, rate)
    try:
        publisher.start()
        wait_for(lambda: committed_rows(out / "tagged"), 60, "the first rows in the cloud")
        assert _on_edge(daemons) == {"readings"}
        if offline:
            proxy.cut()
            wait_for(lambda: not _node(daemons, "gw-site1")["online"], 20, "site1 offline")

        _move(daemons, "edge", 1)
        if kill:
            agents["site1"].send_signal(signal.SIGKILL)
            agents["site1"].wait(10)
            agents["site1"] = daemons.start_agent("gw-site1", *args["site1"])
        online = ["site0"] if offline else list(SITES)
        wait_for(lambda: _agents_at(daemons, 2, online), 90, "the agents online at revision 2")
        assert _on_edge(daemons) == {"readings", "tag"}
        wait_for(
            lambda: all("edge" in _where(committed_rows(out / "tagged"), s) for s in online),
            60,
            "readings tagged on the agents online",
        )

        _move(daemons, "cloud", 2)
        if offline:
            proxy.restore()
        wait_for(lambda: _agents_at(daemons, 3), 90, "both agents at revision 3")
        assert _on_edge(daemons) == {"readings"}
        history = daemons.api("/api/v1/topologies/mover/revisions")["revisions"]
        assert [(r["action"], r["status"]) for r in history] == [
            ("submit", "applied"),
            ("move", "applied"),
            ("move", "applied"),
        ]
        # the readings published while the moves happened (at most n: on a loaded machine
        # the moves may outlast them), then readings after the move back, which the cloud's
        # copy tags
        n = publisher.finish()
        tail = SteadySensors(
            sensors,
            [
                (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
                for i in range(n, n + TAIL)
                for site in SITES
            ],
            rate,
        )
        tail.run()
        assert tail.sent == {s: TAIL for s in SITES}
        wait_for(
            lambda: len(committed_rows(out / "tagged")) >= 2 * (n + TAIL),
            120,
            "every reading at the sink",
        )
        _check(committed_rows(out / "tagged"), n + TAIL, kill, "site1" if offline else "")
    finally:
        publisher.stop.set()
        publisher.join(30)
        sensors.close()
        proxy.close()


def test_a_component_placed_on_the_edge_moves_to_the_cloud_and_back(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    """The other way round: ``tag`` (one task) is placed on the edge by its code, so the cloud
    first has a receiver of its rows, which the move replaces with the hand-over bolt (a spout
    becoming a bolt, its replay filter kept); moved to the cloud, then back to the edge."""
    daemons.start_master()
    out = tmp_path / "out"
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    for site in SITES:
        daemons.start_agent(f"gw-{site}", *_agent_args(mosquitto, site, daemons.grpc))
    wait_for(
        lambda: len([x for x in daemons.api("/api/v1/nodes") if x["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    code = tmp_path / "code"
    code.mkdir()
    # one task: the cloud's receiver of its rows becomes the hand-over bolt's task (more is 501)
    on_edge = "parallelism=1, placement=edge())"
    (code / "mover.py").write_text(SOURCE.replace("parallelism=2)", on_edge))
    daemons.cli("submit", str(code / "mover.py"))
    sensors = Sensors(*mosquitto)
    n, rate = 1800, 60.0
    messages = [
        (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
        for i in range(n)
        for site in SITES
    ]
    publisher = SteadySensors(sensors, messages, rate)
    try:
        publisher.start()
        wait_for(lambda: committed_rows(out / "tagged"), 60, "the first rows in the cloud")
        assert _on_edge(daemons) == {"readings", "tag"}
        _move(daemons, "cloud", 1)
        wait_for(lambda: _agents_at(daemons, 2), 90, "both agents at revision 2")
        assert _on_edge(daemons) == {"readings"}
        wait_for(
            lambda: all("cloud" in _where(committed_rows(out / "tagged"), s) for s in SITES),
            60,
            "readings tagged in the cloud for both sites",
        )
        _move(daemons, "edge", 2)
        wait_for(lambda: _agents_at(daemons, 3), 90, "both agents at revision 3")
        assert _on_edge(daemons) == {"readings", "tag"}
        n = publisher.finish()  # published while the moves happened (at most n)
        tail = SteadySensors(
            sensors,
            [
                (f"sensors/{site}/s{i % 3}", json.dumps({"seq": i}).encode())
                for i in range(n, n + TAIL)
                for site in SITES
            ],
            rate,
        )
        tail.run()
        wait_for(
            lambda: len(committed_rows(out / "tagged")) >= 2 * (n + TAIL),
            120,
            "every reading at the sink",
        )
        _check(committed_rows(out / "tagged"), n + TAIL, False, phases=("edge", "cloud", "edge"))
    finally:
        publisher.stop.set()
        publisher.join(30)
        sensors.close()
