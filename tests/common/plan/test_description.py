"""A topology's code-free description: what the master keeps of a submitted file.

The skeleton read back from a description must answer every question the master asks
as the real topology does (validation, cloud part, packing, revision diffs), and a
description that is not one is refused, never trusted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.common._exceptions import InvalidTopologyError, TopologyLoadError
from headwater.common.api import Bolt, ComponentSpec, Spout, Stream, Topology, custom, edge, fields
from headwater.common.control._revisions import check_edit, diff, fingerprint
from headwater.common.plan import cloud_part, pack_round_robin, validate
from headwater.common.plan._description import (
    MAX_TASKS,
    DescribedCode,
    describe,
    from_description,
)
from headwater.common.plan._loader import load_topology
from tests.test_examples import ARGS
from tests.test_examples import HELPERS as EXAMPLE_HELPERS

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


class Reading(Spout):
    outputs = (Stream(("site", "value"), schema=(str, float)),)

    def next_tuple(self) -> None:
        pass


class Keep(Bolt):
    state_schema = "v2"

    def process(self, tup: Any) -> None:
        pass

    def migrate_state(self, old: object) -> object:
        return old


class Route:
    def prepare(self, context: object, component: str, stream: str, tasks: list[int]) -> None:
        pass

    def choose_tasks(self, values: list[object]) -> list[int]:
        return []


def _topology() -> Topology:
    return (
        Topology("t", config={"topology.reliability.mode": "EFFECTIVELY_ONCE", "obj": object()})
        .add_spout("readings", Reading, parallelism=2, placement=edge(site="a"))
        .add_bolt(
            "keep",
            Keep,
            inputs={"readings": fields("site")},
            outputs=["v"],
            config={"headwater.dsl.steps": ("keep", "more")},
        )
        .add_bolt("route", Keep, inputs={"keep": custom(Route())}, outputs=["x"])
    )


def _shape(c: ComponentSpec) -> tuple[object, ...]:
    streams = [(s.name, s.fields, s.direct, s.schema) for s in c.outputs]  # heronpy's subclass
    config = {k: list(v) if isinstance(v, tuple) else v for k, v in c.config.items()}  # JSON's
    return (c.name, c.kind, c.parallelism, c.placement, c.inputs, streams, config)


# the files beside the topologies (their steps, publishers, Spark jobs): tests/test_examples.py's
HELPERS = {name for names in EXAMPLE_HELPERS.values() for name in names}


@pytest.mark.parametrize(
    "file",
    [p for p in sorted(EXAMPLES.rglob("*.py")) if p.name not in HELPERS],
    ids=lambda p: p.name,
)
def test_a_skeleton_plans_as_the_file_does(file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if file.parent.name == "heron":
        args = ARGS.get(file.name, [file.stem])
        monkeypatch.setenv("HEADWATER_TOPOLOGY_ARGS", json.dumps(args))
    real = load_topology(file)
    skeleton = from_description(describe(real))
    validate(skeleton)
    cloud = cloud_part(skeleton)
    assert pack_round_robin(cloud, 3) == pack_round_robin(cloud_part(real), 3)
    assert [_shape(c) for c in skeleton.components] == [_shape(c) for c in real.components]
    again = from_description(describe(load_topology(file)))
    assert str(diff(skeleton, again)) == "no change"


def test_what_a_revision_compares_travels_without_the_code() -> None:
    skeleton = from_description(describe(_topology()))
    keep = skeleton.component("keep")
    assert isinstance(keep.factory, DescribedCode)
    assert keep.factory.state_schema == "v2"
    assert hasattr(keep.factory, "migrate_state")
    assert not hasattr(skeleton.component("readings").factory, "migrate_state")
    assert keep.config["headwater.dsl.steps"] == ["keep", "more"]
    assert skeleton.config["obj"].startswith("<object object at")  # data only, its repr
    assert str(skeleton.component("route").inputs[0].grouping) == "custom"
    with pytest.raises(RuntimeError, match="no code"):
        keep.factory()
    # a replaced component shows as replaced, an unchanged one does not
    changed = from_description(describe(_topology()))
    other = describe(_topology())
    other["components"][1]["code"] = "0" * 64
    assert diff(changed, from_description(other)).replaced == ("keep",)
    assert fingerprint(changed.component("readings")) == fingerprint(
        from_description(other).component("readings")
    )
    check_edit("replace", ["keep"], skeleton, from_description(other))


def test_a_schema_type_the_wire_cannot_carry_is_named_by_validation() -> None:
    class Point:
        pass

    t = Topology("t").add_spout("s", Reading, outputs=[Stream(("p",), schema=(Point,))])
    with pytest.raises(InvalidTopologyError, match=r"has type .*Point'"):
        validate(from_description(describe(t)))


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (lambda d: d.pop("name"), "name is NoneType, not str"),
        (lambda d: d.update(components={}), "components is dict, not list"),
        (lambda d: d["components"][0].update(parallelism="2"), "parallelism is str"),
        (lambda d: d["components"][0].update(parallelism=True), "parallelism is bool"),
        (lambda d: d["components"][0].update(kind="sink"), "component kind 'sink'"),
        (lambda d: d["components"][0]["placement"].update(where="moon"), "placement 'moon'"),
        (lambda d: d["components"][1]["inputs"][0].update(fields=[1]), "fields is int"),
        (lambda d: d["components"][0].update(parallelism=MAX_TASKS), "the master runs at most"),
    ],
)
def test_a_malformed_description_is_refused(change: Any, says: str) -> None:
    d = describe(_topology())
    change(d)
    with pytest.raises(TopologyLoadError, match=says):
        from_description(d)


def test_a_description_that_is_not_an_object_is_refused() -> None:
    cases: list[object] = [None, [], "t", 5]
    for data in cases:
        with pytest.raises(TopologyLoadError, match="malformed"):
            from_description(data)
