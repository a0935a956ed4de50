"""The fault suite: each test injects one fault for real (processes, broker, disk, network)
and asserts every reading exactly once and the node state the user sees.

It runs as root in CI (``.ci/run``): some tests mount small filesystems.
"""

from __future__ import annotations

from ..integration.conftest import daemons, netns_pair
from ..integration.test_edge_cloud import sensors
from ._broker import broker

__all__ = ["broker", "daemons", "netns_pair", "sensors"]
