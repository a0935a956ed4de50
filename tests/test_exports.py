"""Pins the public surface of ``headwater``."""

from __future__ import annotations

import headwater

EXPECTED = [
    "Bolt",
    "ClusterError",
    "ComponentSpec",
    "Context",
    "CustomGrouping",
    "DEAD_LETTERS",
    "DEFAULT_STREAM",
    "DeadLetter",
    "EmitError",
    "Grouping",
    "HeadwaterError",
    "Input",
    "InvalidTopologyError",
    "PackageMismatchError",
    "Placement",
    "Reliability",
    "SerializationError",
    "Spout",
    "Stream",
    "Topology",
    "TopologyLoadError",
    "Tuple",
    "all_tasks",
    "custom",
    "direct",
    "fields",
    "global_",
    "none",
    "shuffle",
]


def test_all_is_pinned() -> None:
    assert sorted(headwater.__all__) == EXPECTED


def test_all_has_no_duplicates() -> None:
    assert len(headwater.__all__) == len(set(headwater.__all__))


def test_every_export_exists() -> None:
    for name in headwater.__all__:
        assert hasattr(headwater, name), name


def test_exceptions_share_one_root() -> None:
    for name in (
        "ClusterError",
        "EmitError",
        "InvalidTopologyError",
        "PackageMismatchError",
        "SerializationError",
        "TopologyLoadError",
    ):
        assert issubclass(getattr(headwater, name), headwater.HeadwaterError)


def test_version() -> None:
    assert headwater.__version__ == "0.1.0"
