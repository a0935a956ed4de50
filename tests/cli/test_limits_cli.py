"""The per-topology limits' options of `headwater worker` and `headwater agent`."""

from __future__ import annotations

import argparse

import pytest

from headwater._limits_cli import DEFAULTS, size
from headwater.common.node._limits import TopologyLimits


def test_the_options_defaults_are_the_limits_defaults() -> None:
    d = TopologyLimits()
    assert (d.memory_bytes, d.cpus, d.processes) == DEFAULTS


@pytest.mark.parametrize(
    ("text", "expected"),
    [("4GiB", 4 << 30), ("512MiB", 512 << 20), ("512M", 512 << 20), ("1.5g", 3 << 29)],
)
def test_sizes(text: str, expected: int) -> None:
    assert size(text) == expected


@pytest.mark.parametrize("text", ["lots", "4 GB please", "1MiB", "-1G"])
def test_a_bad_size_says_what_to_give(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="give"):
        size(text)
