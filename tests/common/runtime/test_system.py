"""headwater.common.runtime._system: the registry of system components."""

from __future__ import annotations

import pytest

from headwater.common.api import Bolt, ComponentSpec, Spout, Topology, edge, shuffle
from headwater.common.api._system import system_component
from headwater.common.plan import cloud_part, edge_part
from headwater.common.runtime._outbox_sink import OutboxSink
from headwater.common.runtime._receiver import UplinkSpout
from headwater.common.runtime._system import KINDS, resolve


class _Numbers(Spout):
    outputs = ("n",)

    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: object) -> None:
        pass


def _topology() -> Topology:
    return (
        Topology("t")
        .add_spout("numbers", _Numbers, placement=edge())
        .add_bolt("sink", _Sink, inputs={"numbers": shuffle()})
    )


def test_every_kind_resolves_to_its_class() -> None:
    assert sorted(KINDS) == ["handover", "log_spout", "outbox_sink", "uplink_receiver"]
    receiver = resolve(system_component("uplink_receiver", Spout, component="numbers"))
    assert isinstance(receiver, UplinkSpout)


def test_an_unknown_kind_says_which_are_known() -> None:
    with pytest.raises(ValueError, match=r"unknown system component 'nope'.*outbox_sink"):
        resolve(system_component("nope", Bolt))


def _spec(topology: Topology, name: str) -> ComponentSpec:
    return topology.component(name)


def test_the_domains_name_system_components_the_runtime_builds() -> None:
    cloud = cloud_part(_topology())
    assert isinstance(_spec(cloud, "numbers").factory(), UplinkSpout)
    edge_side = edge_part(_topology(), {})
    assert isinstance(_spec(edge_side, "__outbox__numbers").factory(), OutboxSink)
