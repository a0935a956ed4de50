"""Fixtures of the integration tests."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..conftest import show_on_failure
from ._daemons import Daemons


@pytest.fixture
def daemons(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Daemons]:
    """Daemons the test starts, stopped after it; their logs shown when it fails."""
    d = Daemons(tmp_path)
    show_on_failure(request.node, "daemon logs", d.logs)
    try:
        yield d
    finally:
        d.stop()


@pytest.fixture
def netns_pair() -> Iterator[tuple[str, str]]:
    """Two network namespaces joined by a veth pair (10.250.0.1 <-> 10.250.0.2), multicast on."""
    tag = uuid.uuid4().hex[:6]
    a, b = f"hw-m-{tag}", f"hw-a-{tag}"

    def ip(*args: str) -> None:
        subprocess.run(["ip", *args], check=True, capture_output=True, timeout=30)

    ip("netns", "add", a)
    ip("netns", "add", b)
    try:
        ip("link", "add", f"vm{tag}", "type", "veth", "peer", "name", f"va{tag}")
        ip("link", "set", f"vm{tag}", "netns", a)
        ip("link", "set", f"va{tag}", "netns", b)
        for ns, dev, addr in ((a, f"vm{tag}", "10.250.0.1/24"), (b, f"va{tag}", "10.250.0.2/24")):
            ip("-n", ns, "addr", "add", addr, "dev", dev)
            ip("-n", ns, "link", "set", dev, "up", "multicast", "on")
            ip("-n", ns, "link", "set", "lo", "up")
            ip("-n", ns, "route", "add", "224.0.0.0/4", "dev", dev)
        yield a, b
    finally:
        for ns in (a, b):
            subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True, timeout=30)
