"""Moves (issue 37) as ``check_edit`` sees them: the IoT example's windows may go to every
edge and back; a move that also changes code, or that is not exactly-once, is refused."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from headwater import Bolt, Spout, Topology, fields
from headwater.common.api import Placement
from headwater.common.control._moves import move_problem
from headwater.common.control._revisions import EditError, check_edit
from headwater.common.plan import boundary, load_topology
from headwater.placement import edge, sites

IOT = Path(__file__).resolve().parents[3] / "examples" / "iot" / "pipeline.py"


def _placed(topology: Topology, where: dict[str, Placement]) -> Topology:
    return replace(
        topology,
        components=tuple(
            replace(c, placement=where[c.name]) if c.name in where else c
            for c in topology.components
        ),
    )


def test_the_iot_windows_move_to_every_edge_and_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IOT_LOG", str(tmp_path / "log"))
    monkeypatch.setenv("IOT_OUT", str(tmp_path / "out"))
    cloud = load_topology(IOT)
    at_edge = _placed(cloud, {"windows": edge()})
    d = check_edit("move", ["windows"], cloud, at_edge)
    assert d.replaced == ("windows",)
    # the boundary moves with it: windows' closed windows (and dead letters) now cross;
    # anomaly's readings still do (the landing reads them), and every edge step's dead letters
    assert set(boundary(at_edge)) == {*boundary(cloud), "windows"}
    assert boundary(at_edge)["windows"] == ["default", "__dead_letters"]
    assert check_edit("move", ["windows"], at_edge, cloud).replaced == ("windows",)
    # the site windows read the cloud's windows: not available at the edge
    problem = move_problem(cloud, _placed(cloud, {"site": edge()}), ["site"])
    assert problem is not None and "not available at edge()" in problem


class Source(Spout):
    outputs = ("site", "key")

    def next_tuple(self) -> None: ...


class Keyed(Bolt):
    outputs = ("site", "key")

    def process(self, tup: object) -> None: ...


class KeyedV2(Keyed):
    def process(self, tup: object) -> None:
        print("v2")


def _topology(bolt: type[Bolt] = Keyed, mode: str = "EFFECTIVELY_ONCE") -> Topology:
    return (
        Topology("t", config={"topology.reliability.mode": mode})
        .add_spout("src", Source, placement=edge())
        .add_bolt("k", bolt, inputs={"src": fields("key")}, config=sites("site"))
    )


def test_a_move_changes_placement_only() -> None:
    old = _topology()
    new = _placed(_topology(KeyedV2), {"k": edge()})
    with pytest.raises(EditError, match="its code changes too"):
        check_edit("move", ["k"], old, new)


def test_a_move_needs_exactly_once() -> None:
    old = _topology(mode="ATLEAST_ONCE")
    with pytest.raises(EditError, match="is not exactly-once"):
        check_edit("move", ["k"], old, _placed(old, {"k": edge()}))
