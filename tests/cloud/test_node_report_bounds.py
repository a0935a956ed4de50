"""A node's status report is bounded before the master keeps it (it reaches every /metrics
scrape and console snapshot)."""

from __future__ import annotations

from pathlib import Path

from headwater.cloud.master._master import Master
from headwater.cloud.master._nodes import MAX_METRIC_KEY, MAX_NODE_METRICS, NodeRecord
from headwater.common.wire.proto import runtime_pb2 as pb


def test_metrics_past_the_bounds_are_dropped_and_said(tmp_path: Path) -> None:
    master = Master(tmp_path / "state")
    master.nodes.records["gw"] = NodeRecord(pb.NodeInfo(node_id="gw", kind="agent"))
    status = pb.NodeStatus(node_id="gw", health="ok")
    for n in range(MAX_NODE_METRICS + 10):
        status.metrics[f"m{n:06d}"] = 1.0
    status.metrics["k" * (MAX_METRIC_KEY + 1)] = 2.0
    master.nodes.report(status)
    kept = master.nodes.records["gw"].status
    assert kept is not None
    assert sorted(kept.metrics) == [f"m{n:06d}" for n in range(MAX_NODE_METRICS)]
    assert kept.health == "degraded"
    assert list(kept.reasons) == ["the master dropped 11 of its metrics (over its bounds)"]


def test_a_report_within_the_bounds_is_kept_as_it_is(tmp_path: Path) -> None:
    master = Master(tmp_path / "state")
    master.nodes.records["gw"] = NodeRecord(pb.NodeInfo(node_id="gw", kind="agent"))
    status = pb.NodeStatus(node_id="gw", health="ok", metrics={"uptime_s": 3.0})
    master.nodes.report(status)
    kept = master.nodes.records["gw"].status
    assert kept is not None
    assert (dict(kept.metrics), kept.health, list(kept.reasons)) == ({"uptime_s": 3.0}, "ok", [])
