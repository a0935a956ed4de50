"""headwater.common.plan._physical: task ids, packing and upstream spouts."""

from __future__ import annotations

from typing import Any

import pytest

from headwater.common.api import Bolt, Spout, Topology, shuffle
from headwater.common.plan import (
    InstancePlacement,
    PhysicalPlan,
    pack_round_robin,
    task_ids,
    upstream_spouts,
)


class Src(Spout):
    outputs = ("v",)

    def next_tuple(self) -> None:
        pass


class Op(Bolt):
    outputs = ("v",)

    def process(self, tup: Any) -> None:
        pass


def _topo() -> Topology:
    return (
        Topology("t")
        .add_spout("s", Src, parallelism=2)
        .add_bolt("a", Op, inputs={"s": shuffle()}, parallelism=3)
        .add_bolt("b", Op, inputs={"a": shuffle()})
    )


def test_task_ids_consecutive_in_declaration_order() -> None:
    assert task_ids(_topo()) == {"s": [1, 2], "a": [3, 4, 5], "b": [6]}


def test_task_ids_follow_declaration_not_name_order() -> None:
    topo = (
        Topology("t")
        .add_spout("z", Src)
        .add_spout("a", Src, parallelism=2)
        .add_bolt("m", Op, inputs={"z": shuffle()})
    )
    ids = task_ids(topo)
    assert list(ids) == ["z", "a", "m"]
    assert ids == {"z": [1], "a": [2, 3], "m": [4]}


def test_task_ids_empty_topology() -> None:
    assert task_ids(Topology("t")) == {}


def test_pack_one_container() -> None:
    plan = pack_round_robin(_topo(), 1)
    assert plan.containers == 1
    assert plan.topology == "t"
    assert [i.container for i in plan.instances] == [0] * 6
    assert [i.task_id for i in plan.instances] == [1, 2, 3, 4, 5, 6]


def test_pack_two_containers() -> None:
    plan = pack_round_robin(_topo(), 2)
    assert [(i.task_id, i.container) for i in plan.instances] == [
        (1, 0),
        (2, 1),
        (3, 0),
        (4, 1),
        (5, 0),
        (6, 1),
    ]


def test_pack_three_containers() -> None:
    plan = pack_round_robin(_topo(), 3)
    assert plan.instances == (
        InstancePlacement(1, "s", 0, 0),
        InstancePlacement(2, "s", 1, 1),
        InstancePlacement(3, "a", 0, 2),
        InstancePlacement(4, "a", 1, 0),
        InstancePlacement(5, "a", 2, 1),
        InstancePlacement(6, "b", 0, 2),
    )
    assert [i.task_id for i in plan.in_container(0)] == [1, 4]
    assert [i.task_id for i in plan.in_container(2)] == [3, 6]
    assert plan.container_of(5) == 1
    assert plan.instance(4) == InstancePlacement(4, "a", 1, 0)
    assert plan.tasks("a") == [3, 4, 5]


def test_more_containers_than_instances_leaves_some_empty() -> None:
    plan = pack_round_robin(_topo(), 10)
    assert [i.container for i in plan.instances] == [0, 1, 2, 3, 4, 5]
    assert list(plan.in_container(9)) == []


@pytest.mark.parametrize("containers", [0, -1])
def test_pack_rejects_fewer_than_one_container(containers: int) -> None:
    with pytest.raises(ValueError, match="containers must be 1 or more"):
        pack_round_robin(_topo(), containers)


def test_plan_to_dict() -> None:
    plan = pack_round_robin(Topology("t").add_spout("s", Src, parallelism=2), 2)
    assert isinstance(plan, PhysicalPlan)
    assert plan.to_dict() == {
        "topology": "t",
        "containers": 2,
        "instances": [
            {"task": 1, "component": "s", "index": 0, "container": 0},
            {"task": 2, "component": "s", "index": 1, "container": 1},
        ],
        "fused": {},  # no DSL steps
    }


def test_upstream_spouts_diamond() -> None:
    topo = (
        Topology("diamond")
        .add_spout("s", Src)
        .add_bolt("left", Op, inputs={"s": shuffle()})
        .add_bolt("right", Op, inputs={"s": shuffle()})
        .add_bolt("join", Op, inputs={"left": shuffle(), "right": shuffle()})
    )
    assert upstream_spouts(topo) == {
        "s": frozenset({"s"}),
        "left": frozenset({"s"}),
        "right": frozenset({"s"}),
        "join": frozenset({"s"}),
    }


def test_upstream_spouts_two_independent_paths() -> None:
    topo = (
        Topology("paths")
        .add_spout("s1", Src)
        .add_spout("s2", Src)
        .add_bolt("a1", Op, inputs={"s1": shuffle()})
        .add_bolt("a2", Op, inputs={"s2": shuffle()})
        .add_bolt("b1", Op, inputs={"a1": shuffle()})
        .add_bolt("b2", Op, inputs={"a2": shuffle()})
    )
    assert upstream_spouts(topo) == {
        "s1": frozenset({"s1"}),
        "s2": frozenset({"s2"}),
        "a1": frozenset({"s1"}),
        "a2": frozenset({"s2"}),
        "b1": frozenset({"s1"}),
        "b2": frozenset({"s2"}),
    }


def test_upstream_spouts_join_of_two_paths() -> None:
    topo = (
        Topology("join")
        .add_spout("s1", Src)
        .add_spout("s2", Src)
        .add_bolt("a1", Op, inputs={"s1": shuffle()})
        .add_bolt("j", Op, inputs={"a1": shuffle(), "s2": shuffle()})
    )
    spouts = upstream_spouts(topo)
    assert spouts["j"] == frozenset({"s1", "s2"})
    assert spouts["a1"] == frozenset({"s1"})
