"""headwater.cloud.console._snapshot: an agent's edge components as the console draws them,
their counts summed and their tasks' backpressure summed with the tasks that reported it."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from headwater.cloud.console._snapshot import _agents
from headwater.cloud.master._master import Master
from headwater.cloud.master._nodes import NodeRecord
from headwater.common.wire.proto import runtime_pb2 as pb


def test_an_edge_component_carries_its_tasks_backpressure(tmp_path: Path) -> None:
    master = Master(tmp_path / "state")
    metrics = {
        "component:iot/count:executed": 900.0,
        "component:iot/count:emitted": 880.0,
        "component:iot/count:dead_letters": 2.0,
        "edge_task:iot/count/3:backpressure_ms": 1500.0,
        "edge_task:iot/count/4:backpressure_ms": 500.0,
        "edge_task:iot/count/3:executed": 450.0,  # the health manager's, not the page's
        "edge_task:iot/readings/1:backpressure_ms": 0.0,
        "edge_task:other/count/3:backpressure_ms": 7000.0,  # another topology's
    }
    agent = NodeRecord(
        pb.NodeInfo(node_id="gw-1", kind="agent", version="1.0", hostname="gate"),
        queue=asyncio.Queue(),
        status=pb.NodeStatus(node_id="gw-1", health="ok", metrics=metrics),
    )
    agent.last_seen = time.monotonic()
    master.nodes.records = {"gw-1": agent}

    figures = _agents(master, "iot", ["gw-1"])["gw-1"]["components"]

    assert figures == {
        "count": {
            "executed": 900.0,
            "emitted": 880.0,
            "dead_letters": 2.0,
            "backpressure_ms": 2000.0,
            "tasks": 2.0,
        },
        "readings": {"backpressure_ms": 0.0, "tasks": 1.0},
    }
