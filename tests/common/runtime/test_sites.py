"""A component declaring ``sites()`` notes each key's site in its keyed state (issue 37), as
a frame reaches it: once per key, in its snapshot, split by site for a move; a record naming
another site for a known key is counted; a component declaring none notes nothing."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from typing import Any

import pytest

from headwater import Bolt, Context, Spout, Topology, Tuple, fields, shuffle
from headwater.common.runtime._handover import SITES_STATE, split_by_site
from headwater.common.runtime._instance import Instance
from headwater.common.runtime._sites import SITE_CHANGES, site_inputs
from headwater.common.state._state import load_snapshot
from headwater.common.wire import Kind, encode, encode_frame
from headwater.placement import sites


class Src(Spout):
    outputs = ("site", "sensor", "value")

    def next_tuple(self) -> None:
        pass


class Windows(Bolt):
    """Sums each sensor's values in keyed state."""

    def open(self, ctx: Context) -> None:
        self.sums = ctx.keyed_state("sums")

    def process(self, tup: Tuple) -> None:
        _, sensor, value = tup.values
        self.sums[sensor] = self.sums.get(sensor, 0) + value


def _topology(declared: bool = True) -> Topology:
    return (
        # sites, moves and snapshots are an exactly-once topology's (the instances here are
        # never run: no restore is awaited)
        Topology("t", config={"topology.reliability.mode": "EFFECTIVELY_ONCE"})
        .add_spout("src", Src)  # task 1
        .add_bolt(
            "windows",
            Windows,
            inputs={"src": fields("sensor")},
            config=sites("site") if declared else {},
        )  # task 2
        .add_bolt("out", Windows, inputs={"src": shuffle()}, config=sites("site"))  # task 3
    )


@pytest.fixture
def made() -> Iterator[list[Instance]]:
    out: list[Instance] = []
    yield out
    for inst in out:  # the gateway's wake-up pair (its thread never started)
        inst.gateway._wake_r.close()
        inst.gateway._wake_w.close()


def _instance(made: list[Instance], topology: Topology) -> Instance:
    a, b = socket.socketpair()
    inst = Instance(topology, 2, a)
    inst.component_obj.open(inst.ctx)
    made.append(inst)
    a.close()
    b.close()
    return inst


def _frame(values: list[list[Any]]) -> bytes:
    return encode_frame(Kind.DATA, 2, 1, len(values), b"default", encode(values))


def test_each_keys_site_is_noted_once_and_snapshot_with_the_state(made: list[Instance]) -> None:
    topology = _topology()
    assert site_inputs(topology, "windows") == {("src", "default"): ([1], 0)}
    assert site_inputs(topology, "out") == {}  # not fields-grouped: no key to note
    inst = _instance(made, topology)
    rows = [["plant-1", "s1", 1], ["plant-2", "s2", 2], ["plant-1", "s1", 3], ["plant-2", "s3", 4]]
    inst.gate.handle(_frame(rows))
    table = inst.store.keyed[SITES_STATE]
    assert dict(table) == {"s1": "plant-1", "s2": "plant-2", "s3": "plant-2"}
    assert table.take_changed() == {"s1", "s2", "s3"}
    inst.gate.handle(_frame([["plant-1", "s1", 5], ["plant-9", "s2", 1]]))
    assert table.take_changed() == set()  # known keys are not written again
    assert table["s2"] == "plant-2" and inst.counts.user_counters[SITE_CHANGES] == 1
    # the snapshot carries the table, so a move can split the state by site
    per_site = split_by_site("windows", [inst.store.dump(1)])
    _, keyed, _ = load_snapshot(per_site["plant-2"])
    assert dict(keyed["sums"]) == {"s2": 3, "s3": 4}
    assert sorted(per_site) == ["plant-1", "plant-2"]


def test_a_component_declaring_no_sites_notes_nothing(made: list[Instance]) -> None:
    inst = _instance(made, _topology(declared=False))
    assert inst.executor.sites is None
    inst.gate.handle(_frame([["plant-1", "s1", 1]]))
    assert SITES_STATE not in inst.store.keyed
