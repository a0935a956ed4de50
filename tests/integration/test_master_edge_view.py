"""The master's view of a topology includes its edge subgraph, so the API draws the whole DAG.

Its topology master holds the cloud part only, where the boundary component is an uplink
receiver without inputs; the master adds ``edge``: the components its agents run, each with
its selector and the agents that match it, and the uplink boundary.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from .._ports import free_port
from ._daemons import Daemons
from ._support import wait_for

pytestmark = pytest.mark.cluster

FLEET = """
from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle
from headwater.placement import edge


class Sense(Spout):
    outputs = ("sensor", "value")

    def next_tuple(self) -> None:
        pass


class Pass(Bolt):
    outputs = ("sensor", "value")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.ctx.emit(tup.values)


topology = (
    Topology("fleet")
    .add_spout("sense", Sense, placement=edge())
    .add_spout("gauge", Sense, placement=edge(site="north"))
    .add_bolt("north", Pass, inputs={"gauge": shuffle()}, placement=edge(site="north"))
    .add_bolt("store", Pass, inputs={"sense": shuffle(), "north": shuffle()}, parallelism=2)
)
"""


def test_the_master_shows_the_edge_subgraph_and_its_agents(
    daemons: Daemons, tmp_path: Path
) -> None:
    (tmp_path / "fleet.py").write_text(FLEET)
    daemons.start_master()
    daemons.start_worker("w1")
    for name, site in (("gw-north", "north"), ("gw-south", "south")):
        daemons.start_agent(  # --master: not one found by zeroconf on this machine
            name,
            "--master",
            daemons.grpc,
            "--label",
            f"site={site}",
            "--status-port",
            str(free_port()),
        )
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 3,
        30,
        "the worker and both agents online",
    )
    assert "submitted 'fleet'" in daemons.cli("submit", str(tmp_path / "fleet.py"))
    summary = wait_for(
        lambda: (s := daemons.api("/api/v1/topologies/fleet"))["edge"]["agents"] and s,
        30,
        "the agents to take the edge subgraph",
    )
    # the existing fields stay as they were: the cloud part, the boundary as a receiver
    shuffled = {"stream": "default", "grouping": "shuffle"}
    assert [(c["name"], c["kind"], c["inputs"]) for c in summary["components"]] == [
        ("sense", "spout", []),
        ("north", "spout", []),
        (
            "store",
            "bolt",
            [{"component": "sense", **shuffled}, {"component": "north", **shuffled}],
        ),
    ]
    fields = [{"stream": "default", "fields": ["sensor", "value"]}]
    assert summary["edge"] == {
        "agents": ["gw-north", "gw-south"],
        "boundary": {"sense": ["default"], "north": ["default"]},
        "components": [
            {
                "name": "sense",
                "kind": "spout",
                "parallelism": 1,
                "inputs": [],
                "outputs": fields,
                "selector": {},
                "uplink": True,
                "agents": ["gw-north", "gw-south"],
            },
            {
                "name": "gauge",
                "kind": "spout",
                "parallelism": 1,
                "inputs": [],
                "outputs": fields,
                "selector": {"site": "north"},
                "uplink": False,
                "agents": ["gw-north"],
            },
            {
                "name": "north",
                "kind": "bolt",
                "parallelism": 1,
                "inputs": [{"component": "gauge", **shuffled}],
                "outputs": fields,
                "selector": {"site": "north"},
                "uplink": True,
                "agents": ["gw-north"],
            },
        ],
    }
    plan = daemons.api("/api/v1/topologies/fleet/plan")
    assert plan["edge"] == summary["edge"]
    assert {i["component"] for i in plan["instances"]} == {"sense", "north", "store"}
    assert [t["edge"] for t in daemons.api("/api/v1/topologies")] == [summary["edge"]]
    # and `headwater status` prints it, under the cloud components' figures
    status = daemons.cli("status", "fleet")
    assert (
        "edge component      runs on                 agents\n"
        "sense               every agent             gw-north, gw-south  (uplink to the cloud)\n"
        "gauge               site=north              gw-north\n"
        "north               site=north              gw-north  (uplink to the cloud)\n"
    ) in status
