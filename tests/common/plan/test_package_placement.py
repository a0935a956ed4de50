"""``headwater_placement.json``: placements as text, read back; the loader places the
components it names in every process that loads the file; a bad file says why."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from headwater.common._exceptions import TopologyLoadError
from headwater.common.api import Placement
from headwater.common.plan import load_topology
from headwater.common.plan._package_placement import (
    PLACEMENT_FILE,
    parse_placement,
    placement_problem,
    placement_text,
)

TOPO = """
from headwater import Bolt, Spout, Topology, shuffle
from headwater.placement import edge


class S(Spout):
    outputs = ("x",)

    def next_tuple(self):
        pass


class B(Bolt):
    outputs = ("x",)

    def process(self, tup):
        pass


topology = (
    Topology("pl")
    .add_spout("s", S, placement=edge())
    .add_bolt("a", B, inputs={"s": shuffle()}, placement=edge())
    .add_bolt("b", B, inputs={"a": shuffle()})
)
"""


@pytest.mark.parametrize(
    ("text", "placement"),
    [
        ("cloud", Placement()),
        ("edge", Placement("edge", {})),
        ("edge()", Placement("edge", {})),
        ("edge(site=plant-1)", Placement("edge", {"site": "plant-1"})),
        ("edge(site='a', zone=b)", Placement("edge", {"site": "a", "zone": "b"})),
    ],
)
def test_a_placement_reads_and_writes_back(text: str, placement: Placement) -> None:
    assert parse_placement(text) == placement
    assert parse_placement(placement_text(placement)) == placement


@pytest.mark.parametrize("text", ["mars", "edge(site)", "edge(site=)", "edge(a b=c)", "cloud(x)"])
def test_a_bad_placement_says_what_to_write(text: str) -> None:
    with pytest.raises(ValueError, match="LABEL=VALUE"):
        parse_placement(text)


def test_the_loader_places_the_named_components(tmp_path: Path) -> None:
    (tmp_path / "topo.py").write_text(TOPO)
    (tmp_path / PLACEMENT_FILE).write_text(json.dumps({"a": "cloud", "b": "edge(site=x)"}))
    topology = load_topology(tmp_path / "topo.py")
    where = {c.name: c.placement for c in topology.components}
    assert where == {
        "s": Placement("edge", {}),
        "a": Placement(),
        "b": Placement("edge", {"site": "x"}),
    }


@pytest.mark.parametrize(
    ("doc", "says"),
    [
        ({"zz": "cloud"}, "which the topology does not have"),
        ({"a": 3}, "a placement is text"),
        ({"a": "moon"}, "use cloud, edge"),
        ({"a": {"to": "edge"}}, "a move's placement is"),
        ({"a": {"to": "edge", "from": 1}}, "a placement is text"),
        ({"a": {"to": "moon", "from": "cloud"}}, "use cloud, edge"),
        ({}, "name at least one component"),
    ],
)
def test_a_bad_placement_file_is_refused_with_the_reason(
    tmp_path: Path, doc: object, says: str
) -> None:
    (tmp_path / "topo.py").write_text(TOPO)
    (tmp_path / PLACEMENT_FILE).write_text(json.dumps(doc))
    with pytest.raises(TopologyLoadError, match=says):
        load_topology(tmp_path / "topo.py")
    assert placement_problem(doc) is not None or says.startswith("which")
