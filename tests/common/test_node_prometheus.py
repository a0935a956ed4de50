"""headwater.common.node._prometheus: a node's status as families, over fixed inputs."""

from __future__ import annotations

from headwater.common._prometheus import FamilyCollector
from headwater.common.node._prometheus import add_node_status
from headwater.common.wire.proto import runtime_pb2 as pb

from .control.test_prometheus import _l, scrape


def _agent_status() -> pb.NodeStatus:
    return pb.NodeStatus(
        node_id="gw-1",
        containers=["iot/0"],
        backlog_bytes=2048,
        backlog_batches=3,
        health="degraded",
        reasons=["mqtt: broker unreachable"],
        uplinks=[
            pb.UplinkState(
                topology="iot",
                connected=True,
                metrics={
                    "uplink_connected": 1.0,
                    "uplink_sent": 12.0,
                    "outbox_bytes": 2048.0,
                    "outbox_budget_bytes": 65536.0,
                },
            )
        ],
        metrics={
            "uptime_s": 123456.0,
            "uplink_connected": 1.0,
            "outbox_budget_bytes": 65536.0,
            "mqtt_received": 50.0,
            "mqtt_connected": 0.0,
            "mqtt_paused_s": 1.5,
            "revision:iot": 2.0,
            "revision_failed:iot": 0.0,
            "model:iot/score": 4.0,
            "component:iot/score:executed": 45.0,
            "component:iot/score:user:anomalies": 2.0,
            "checkpoint:iot:latest": 8.0,
            "checkpoint:iot:duration_ms": 40.0,
            "checkpoint:iot:size_bytes": 512.0,
            "checkpoint:iot:started": 9.0,
            "checkpoint:iot:in_progress": 1.0,
            "brand_new": 5.0,
        },
    )


def test_an_agents_status_maps_to_node_families() -> None:
    status = _agent_status()
    samples, types = scrape(FamilyCollector(lambda f: add_node_status(f, "gw-1", status)))
    node = {"node": "gw-1"}
    iot = {**node, "topology": "iot"}
    score = {**iot, "component": "score"}
    domain = _l(topology="iot", domain="gw-1")
    assert samples == {
        ("headwater_node_uptime_seconds", _l(**node)): 123456.0,
        ("headwater_node_health", _l(**node, health="ok")): 0.0,
        ("headwater_node_health", _l(**node, health="degraded")): 1.0,
        ("headwater_node_health", _l(**node, health="failed")): 0.0,
        ("headwater_node_backlog_bytes", _l(**node)): 2048.0,
        ("headwater_node_backlog_batches", _l(**node)): 3.0,
        ("headwater_node_containers", _l(**node)): 1.0,
        ("headwater_node_uplink_connected", _l(**iot)): 1.0,
        ("headwater_node_uplink_sent_batches_total", _l(**iot)): 12.0,
        ("headwater_node_outbox_bytes", _l(**iot)): 2048.0,
        ("headwater_node_uplinks_connected", _l(**node)): 1.0,
        ("headwater_node_outbox_budget_bytes", _l(**node)): 65536.0,
        ("headwater_node_mqtt_received_total", _l(**node)): 50.0,
        ("headwater_node_mqtt_connected", _l(**node)): 0.0,
        ("headwater_node_mqtt_paused_seconds_total", _l(**node)): 1.5,
        ("headwater_node_revision", _l(**iot)): 2.0,
        ("headwater_node_revision_failed", _l(**iot)): 0.0,
        ("headwater_node_model_version", _l(**score)): 4.0,
        ("headwater_node_component_executed_total", _l(**score)): 45.0,
        ("headwater_node_component_user_counter_total", _l(**score, counter="anomalies")): 2.0,
        ("headwater_checkpoint_latest_id", domain): 8.0,
        ("headwater_checkpoint_duration_seconds", domain): 0.04,
        ("headwater_checkpoint_size_bytes", domain): 512.0,
        ("headwater_checkpoints_started_total", domain): 9.0,
        ("headwater_checkpoint_in_progress", domain): 1.0,
        ("headwater_node_metric", _l(**node, metric="brand_new")): 5.0,
    }
    assert types["headwater_node_mqtt_received"] == "counter"
    assert types["headwater_node_backlog_bytes"] == "gauge"


def test_an_offline_nodes_uplinks_show_down_and_its_checkpoints_may_be_left_out() -> None:
    status = _agent_status()
    samples, _ = scrape(
        FamilyCollector(
            lambda f: add_node_status(f, "gw-1", status, online=False, checkpoints=False)
        )
    )
    assert samples[("headwater_node_uplink_connected", _l(node="gw-1", topology="iot"))] == 0.0
    assert not any(name.startswith("headwater_checkpoint") for name, _ in samples)


def test_a_node_that_never_reported_shows_no_health() -> None:
    samples, _ = scrape(FamilyCollector(lambda f: add_node_status(f, "w1", None)))
    assert samples == {
        ("headwater_node_health", _l(node="w1", health=h)): 0.0
        for h in ("ok", "degraded", "failed")
    }
