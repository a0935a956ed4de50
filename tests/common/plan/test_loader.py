"""headwater.common.plan._loader: a topology file, whole or one domain's subgraph."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from headwater.common.api._system import SystemComponent
from headwater.common.plan import add_domain_arguments, domain_args, load_topology

FILE = """
from headwater import Bolt, Spout, Topology, shuffle
from headwater.placement import edge


class Numbers(Spout):
    outputs = ("n",)

    def next_tuple(self):
        pass


class Sink(Bolt):
    def process(self, tup):
        pass


topology = (
    Topology("t")
    .add_spout("numbers", Numbers, placement=edge(site="one"))
    .add_bolt("sink", Sink, inputs={"numbers": shuffle()})
)
"""


@pytest.fixture
def path(tmp_path: Path) -> Path:
    file = tmp_path / "topo.py"
    file.write_text(FILE)
    return file


def test_without_a_domain_the_whole_topology(path: Path) -> None:
    assert [c.name for c in load_topology(path).components] == ["numbers", "sink"]


def test_the_cloud_domain_receives_what_the_edge_sends(path: Path) -> None:
    cloud = load_topology(path, domain="cloud")
    assert [c.name for c in cloud.components] == ["numbers", "sink"]
    receiver = cloud.component("numbers").factory
    assert isinstance(receiver, SystemComponent) and receiver.kind == "uplink_receiver"


def test_the_edge_domain_is_what_the_labels_select(path: Path) -> None:
    edge = load_topology(path, domain="edge", labels={"site": "one"})
    assert [c.name for c in edge.components] == ["numbers", "__outbox__numbers"]
    assert load_topology(path, domain="edge", labels={"site": "two"}).components == ()


def test_the_domain_travels_as_flags() -> None:
    p = argparse.ArgumentParser()
    add_domain_arguments(p)
    args = p.parse_args(domain_args("edge", {"site": "one"}))
    assert (args.domain, args.labels) == ("edge", {"site": "one"})
    whole = p.parse_args(domain_args(None))
    assert (whole.domain, whole.labels) == (None, {})
