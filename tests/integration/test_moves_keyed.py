"""Issue 37: a keyed component moved live between every agent and the cloud with its state,
under a steady publisher, on a cluster of real processes: each sensor's count goes on where
it moved from where the other side left it, every reading counted once."""

from __future__ import annotations

import json
import os
import signal
from functools import partial
from pathlib import Path
from typing import Any

import psutil
import pytest

from ._daemons import Daemons
from ._support import committed_rows, wait_for
from .test_edge_cloud import SITES, Sensors, SteadySensors, _agent_args
from .test_moves import agents_at, move_component

pytestmark = pytest.mark.cluster
SENSORS = 3
TAIL = 30

SOURCE = """
import json
import os
from functools import partial

from headwater import Bolt, Reliability, Topology, fields, shuffle
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.placement import edge, sites

LOG = os.environ.get("HEADWATER_INGEST_LOG", "/nonexistent")
OUT = os.environ.get("HW_TEST_OUT", "/nonexistent")


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


class Parse(Bolt):
    outputs = ("sensor", "site", "seq")

    def open(self, ctx):
        self.ctx = ctx

    def process(self, tup):
        topic, payload, _ = tup.values
        self.ctx.emit([topic, topic.split("/")[1], json.loads(payload)["seq"]])


class Count(Bolt):
    # keyed per sensor: its readings so far, wherever they were counted
    outputs = ("sensor", "seq", "count", "where")

    def open(self, ctx):
        self.ctx = ctx
        self.counts = ctx.keyed_state("counts")
        self.where = "edge" if "HEADWATER_INGEST_LOG" in os.environ else "cloud"

    def process(self, tup):
        sensor, site, seq = tup.values
        n = self.counts.get(sensor, 0) + 1
        self.counts[sensor] = n
        self.ctx.emit([sensor, seq, n, self.where])


topology = (
    Topology("keyed", config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 0.3,
    })
    .add_spout("readings", partial(Readings, LOG, partitions=1), outputs=Readings.outputs,
               placement=edge())
    .add_bolt("parse", Parse, inputs={"readings": shuffle()}, placement=edge())
    .add_bolt("count", Count, inputs={"parse": fields("sensor")}, placement=edge(),
              config=sites("site"))
    .add_bolt("sink", partial(TransactionalFileSink, OUT + "/counted"),
              inputs={"count": shuffle()})
)
"""


LANDED = """
topology = topology.add_bolt(
    "land", partial(TransactionalFileSink, OUT + "/landed"), inputs={"parse": shuffle()}
)
"""


def _published(n: int) -> list[tuple[str, int]]:
    """(sensor, seq) of readings 0 to ``n`` of both sites."""
    return [(f"sensors/{site}/s{i % SENSORS}", i) for i in range(n) for site in SITES]


def _readings(start: int, end: int) -> list[tuple[str, bytes]]:
    """Readings ``start`` to ``end`` of every sensor of both sites, interleaved."""
    return [
        (f"sensors/{site}/s{i % SENSORS}", json.dumps({"seq": i}).encode())
        for i in range(start, end)
        for site in SITES
    ]


def _cluster(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path, source: str
) -> tuple[Path, dict[str, list[str]], dict[str, psutil.Process]]:
    """A master, a worker and both sites' agents, running ``source`` submitted: where its
    sink writes, and each site's agent's arguments and process."""
    daemons.start_master()
    out = tmp_path / "out"
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})
    args = {s: _agent_args(mosquitto, s, daemons.grpc) for s in SITES}
    agents = {s: daemons.start_agent(f"gw-{s}", *args[s]) for s in SITES}
    wait_for(
        lambda: len([x for x in daemons.api("/api/v1/nodes") if x["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    code = tmp_path / "code"
    code.mkdir()
    (code / "keyed.py").write_text(source)
    daemons.cli("submit", str(code / "keyed.py"))
    return out, args, agents


_move = partial(move_component, topology="keyed", component="count")
_agents_at = partial(agents_at, topology="keyed")


def _check(
    rows: list[list[Any]], n: int, repeats: bool, phases: tuple[str, ...] = ("edge", "cloud")
) -> None:
    """Per sensor, in the order its readings were published: counted 1, 2, 3, ... with no gap
    and none twice, first on its agent and then in the cloud (so the cloud's count went on
    from the agent's). ``repeats``: a reading the broker delivered again after an agent's
    SIGKILL is a second log record, counted as one more (docs/design.md, "Edge placement,
    checkpoint domains and the uplink")."""
    for site in SITES:
        for k in range(SENSORS):
            sensor = f"sensors/{site}/s{k}"
            mine = sorted((r for r in rows if r[0] == sensor), key=lambda r: (r[1], r[2]))
            counts = [r[2] for r in mine]
            assert sorted(counts) == list(range(1, len(mine) + 1)), f"{sensor}: counts {counts}"
            seqs = [r[1] for r in mine]
            want = [i for i in range(n) if i % SENSORS == k]
            if repeats:
                assert sorted(set(seqs)) == want, f"{sensor}: readings missing"
            else:
                assert seqs == want, f"{sensor}: gaps or duplicates"
            by_count = sorted(mine, key=lambda r: r[2])
            runs = [r[3] for i, r in enumerate(by_count) if i == 0 or r[3] != by_count[i - 1][3]]
            assert runs == list(phases), f"{sensor}: counted by {runs}"


@pytest.mark.parametrize("fault", ["", "kill"], ids=["steady", "kill"])
def test_a_keyed_component_moves_from_every_agent_to_the_cloud_with_its_state(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path, fault: str
) -> None:
    """``count`` (keyed per sensor, ``sites("site")``) runs on both agents; moved to the cloud
    while readings flow, each agent's counts travel in its fence and the cloud's copy goes
    on from them. ``kill``: site1's agent is SIGKILLed right after the move is accepted, and
    started again."""
    out, args, agents = _cluster(daemons, mosquitto, tmp_path, SOURCE)
    sensors = Sensors(*mosquitto)
    n, rate = 1200, 60.0  # per site at most, over about 40 s in all
    publisher = SteadySensors(sensors, _readings(0, n), rate)
    try:
        publisher.start()
        wait_for(lambda: committed_rows(out / "counted"), 60, "the first counts in the cloud")
        _move(daemons, "cloud", 1)
        if fault == "kill":
            agents["site1"].send_signal(signal.SIGKILL)
            agents["site1"].wait(10)
            agents["site1"] = daemons.start_agent("gw-site1", *args["site1"])
        wait_for(lambda: _agents_at(daemons, 2), 90, "both agents at revision 2")
        view = daemons.api("/api/v1/topologies/keyed")
        assert {c["name"] for c in view["edge"]["components"]} == {"readings", "parse"}
        # the readings published while the move happened (at most n), then readings after
        # it, which the cloud's copy counts for every sensor
        n = publisher.finish()
        tail = SteadySensors(sensors, _readings(n, n + TAIL), rate)
        tail.run()
        assert tail.sent == {s: TAIL for s in SITES}
        wait_for(
            lambda: len(committed_rows(out / "counted")) >= 2 * (n + TAIL),
            120,
            "every reading counted",
        )
        _check(committed_rows(out / "counted"), n + TAIL, fault == "kill")
        dead = daemons.api("/api/v1/topologies/keyed/exceptions")
        assert not [e for e in dead if "did not move" in e.get("message", "")], dead
    finally:
        publisher.stop.set()
        publisher.join(30)
        sensors.close()


@pytest.mark.parametrize(
    "fault",
    ["", "kill-agent", "kill-container", "shared"],
    ids=["steady", "kill-agent", "kill-container", "shared"],
)
def test_a_keyed_component_moves_from_the_cloud_to_every_agent_and_back_with_its_state(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path, fault: str
) -> None:
    """``count`` (keyed per sensor, two tasks) runs in the cloud by its code; moved to both
    agents while readings flow, each agent's fence (the last row its input's retiring outbox
    sealed) has the cloud's tasks give up that site's keys, which the master hands to the
    agent's new copy; then moved back, its state in each agent's fence again. ``kill-agent``:
    site1's agent is SIGKILLed right after the first move is accepted, and started again;
    ``kill-container``: the worker's container, which runs the cloud's copy, is SIGKILLed
    then (its worker starts it again, and the cloud restores its last checkpoint);
    ``shared``: a cloud sink also reads what ``count`` reads, so every reading keeps crossing
    and the cloud's receiver splits each agent's rows at its fence (the sink lands each one
    once, whichever side counts it)."""
    in_cloud = 'placement=edge(),\n              config=sites("site"))'
    assert in_cloud in SOURCE
    cloud_source = SOURCE.replace(in_cloud, 'parallelism=2,\n              config=sites("site"))')
    if fault == "shared":
        cloud_source += LANDED
    out, args, agents = _cluster(daemons, mosquitto, tmp_path, cloud_source)
    sensors = Sensors(*mosquitto)
    n, rate = 1500, 60.0
    publisher = SteadySensors(sensors, _readings(0, n), rate)
    try:
        publisher.start()
        wait_for(lambda: committed_rows(out / "counted"), 60, "the first counts in the cloud")
        _move(daemons, "edge", 1)
        if fault == "kill-agent":
            agents["site1"].send_signal(signal.SIGKILL)
            agents["site1"].wait(10)
            agents["site1"] = daemons.start_agent("gw-site1", *args["site1"])
        elif fault == "kill-container":
            (container,) = daemons.api("/api/v1/topologies/keyed")["containers"]
            os.kill(container["pid"], signal.SIGKILL)
        wait_for(lambda: _agents_at(daemons, 2), 90, "both agents at revision 2")
        view = daemons.api("/api/v1/topologies/keyed")
        assert {c["name"] for c in view["edge"]["components"]} == {"readings", "parse", "count"}
        wait_for(
            lambda: {r[3] for r in committed_rows(out / "counted")} == {"cloud", "edge"},
            60,
            "counts from the agents",
        )
        _move(daemons, "cloud", 2)
        wait_for(lambda: _agents_at(daemons, 3), 90, "both agents at revision 3")
        # the readings published while the moves happened (at most n: they may outlast them
        # on a loaded machine, or after a kill), then readings after the move back, which the
        # cloud's copy counts
        n = publisher.finish()
        tail = SteadySensors(sensors, _readings(n, n + TAIL), rate)
        tail.run()
        assert tail.sent == {s: TAIL for s in SITES}
        wait_for(
            lambda: len(committed_rows(out / "counted")) >= 2 * (n + TAIL),
            120,
            "every reading counted",
        )
        phases = ("cloud", "edge", "cloud")
        _check(committed_rows(out / "counted"), n + TAIL, fault == "kill-agent", phases)
        if fault == "shared":  # every parsed reading landed once, by the sink beside count
            wait_for(
                lambda: len(committed_rows(out / "landed")) >= 2 * (n + TAIL), 60, "all landed"
            )
            landed = sorted((r[0], r[2]) for r in committed_rows(out / "landed"))
            want = [(sensor, seq) for sensor, seq in _published(n + TAIL)]
            assert landed == sorted(want)
    finally:
        publisher.stop.set()
        publisher.join(30)
        sensors.close()
