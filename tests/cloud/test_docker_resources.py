"""The containers' resource config (``headwater.container.cpu``, ``.ram.bytes``, and Heron's
``topology.container.cpu`` / ``.ram``): read with defaults, validated with the topology."""

from __future__ import annotations

from typing import Any

import pytest

from headwater import Bolt, Spout, Topology, Tuple, shuffle
from headwater.common._exceptions import InvalidTopologyError
from headwater.common.api._config import ContainerResources
from headwater.common.plan import validate


class _Words(Spout):
    outputs = ("word",)

    def next_tuple(self) -> None:
        pass


class _Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


def _topology(config: dict[str, Any]) -> Topology:
    return (
        Topology("t")
        .add_spout("words", _Words)
        .add_bolt("sink", _Sink, inputs={"words": shuffle()})
        .with_config(**config)
    )


@pytest.mark.parametrize(
    ("config", "cpu", "ram"),
    [
        ({}, 1.0, 1 << 30),
        (
            {"headwater.container.cpu": 0.25, "headwater.container.ram.bytes": 128 << 20},
            0.25,
            128 << 20,
        ),
        (
            {"headwater.container.cpu": "2", "headwater.container.ram.bytes": "268435456"},
            2.0,
            256 << 20,
        ),
        ({"topology.container.cpu": 1.5, "topology.container.ram": 2 << 30}, 1.5, 2 << 30),
        ({"headwater.container.cpu": 0.5, "topology.container.cpu": 3}, 0.5, 1 << 30),
        ({"headwater.container.ram.bytes": float(64 << 20)}, 1.0, 64 << 20),
    ],
)
def test_resources_are_read_with_defaults_and_heron_keys(
    config: dict[str, Any], cpu: float, ram: int
) -> None:
    assert ContainerResources.from_mapping(config) == ContainerResources(cpu, ram)
    validate(_topology(config))


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({"headwater.container.cpu": 0}, "headwater.container.cpu must be positive, got 0"),
        ({"headwater.container.cpu": 0.001}, "must be at least 0.01 (cores)"),
        ({"headwater.container.cpu": "many"}, "headwater.container.cpu='many' is not a number"),
        ({"headwater.container.cpu": float("nan")}, "must be at least 0.01"),
        ({"headwater.container.cpu": float("inf")}, "must be at least 0.01"),
        ({"headwater.container.ram.bytes": 1 << 20}, "from 67108864 (64 MiB) to"),
        ({"headwater.container.ram.bytes": 2 << 40}, "(1 TiB) bytes, got"),
        ({"headwater.container.ram.bytes": 150_000_000.5}, "is not a whole number of bytes"),
        ({"headwater.container.ram.bytes": float("inf")}, "not a whole number of bytes"),
        ({"headwater.container.ram.bytes": "1GB"}, "'1GB' is not a number"),
        ({"topology.container.ram": -1}, "topology.container.ram must be positive"),
    ],
)
def test_bad_resources_are_refused_naming_the_key(config: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError) as refused:
        ContainerResources.from_mapping(config)
    assert says in str(refused.value)
    with pytest.raises(InvalidTopologyError) as invalid:
        validate(_topology(config))
    assert "topology 't': bad config: " in str(invalid.value) and says in str(invalid.value)
