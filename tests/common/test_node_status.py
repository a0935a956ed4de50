"""What a node says of itself in its status report."""

from __future__ import annotations

import time
from pathlib import Path

from headwater.common.node import Node


def test_uptime_is_the_process_s_not_the_host_s(tmp_path: Path) -> None:
    before = time.monotonic()
    node = Node("127.0.0.1:1", tmp_path / "node", insecure=True)
    uptime = node.status().metrics["uptime_s"]
    assert 0.0 <= uptime <= round(time.monotonic() - before, 1) + 0.1
