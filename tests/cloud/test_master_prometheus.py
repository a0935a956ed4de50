"""headwater.cloud.master._prometheus: the master's nodes, rollouts and traffic as families,
over fixed inputs, and ``GET /metrics`` through the app with and without a viewer's token."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from headwater.cloud.master._master import Master
from headwater.cloud.master._nodes import NodeRecord
from headwater.cloud.master._prometheus import fill
from headwater.cloud.master._rollout import Phase, Rollout
from headwater.cloud.master._traffic import MethodTraffic
from headwater.common._prometheus import FamilyCollector
from headwater.common.wire.proto import runtime_pb2 as pb

from ..common.control.test_prometheus import _l, scrape
from .test_rest_auth import _bearer, _run, _says


def _master(tmp_path: Path) -> Master:
    master = Master(tmp_path / "state")
    online = NodeRecord(
        pb.NodeInfo(node_id="gw-1", kind="agent", version="1.0", hostname="gate"),
        queue=asyncio.Queue(),
        status=pb.NodeStatus(
            node_id="gw-1",
            backlog_bytes=10,
            backlog_batches=1,
            health="ok",
            uplinks=[pb.UplinkState(topology="iot", connected=True)],
        ),
    )
    online.last_seen = time.monotonic()
    gone = NodeRecord(pb.NodeInfo(node_id="w1", kind="worker", version="1.0", hostname="box"))
    gone.last_seen = time.monotonic() - 3600  # never attached this run, last seen long ago
    master.nodes.records = {"gw-1": online, "w1": gone}
    master.rollouts.records = [
        Rollout(1, "m", 2, "iot", "anomaly", phase=Phase.DONE),
        Rollout(2, "m", 3, "iot", "anomaly", phase=Phase.WATCHING),
    ]
    master.traffic.methods["/headwater.v1.Cluster/Attach"] = MethodTraffic(1, 20, 3, 400)
    return master


def test_nodes_rollouts_and_traffic_map_to_their_families(tmp_path: Path) -> None:
    master = _master(tmp_path)
    samples, types = scrape(FamilyCollector(lambda f: fill(f, master)))
    gw, w1 = {"node": "gw-1"}, {"node": "w1"}
    assert samples[("headwater_node_info", _l(**gw, kind="agent", version="1.0", hostname="gate"))]
    assert samples[("headwater_node_online", _l(**gw))] == 1.0
    assert samples[("headwater_node_online", _l(**w1))] == 0.0
    assert samples[("headwater_node_heartbeat_age_seconds", _l(**w1))] >= 3600
    assert samples[("headwater_node_health", _l(**gw, health="ok"))] == 1.0
    assert samples[("headwater_node_health", _l(**w1, health="ok"))] == 0.0  # never reported
    assert samples[("headwater_node_backlog_bytes", _l(**gw))] == 10.0
    assert samples[("headwater_node_uplink_connected", _l(**gw, topology="iot"))] == 1.0
    assert ("headwater_node_backlog_bytes", _l(**w1)) not in samples
    rollout = {"model": "m", "topology": "iot", "component": "anomaly"}
    assert {
        dict(labels)["phase"]: value
        for (name, labels), value in samples.items()
        if name == "headwater_model_rollout_phase"
    } == {p.value: (1.0 if p is Phase.WATCHING else 0.0) for p in Phase}  # the newest one
    assert samples[("headwater_model_rollout_version", _l(**rollout))] == 3.0
    attach = _l(method="/headwater.v1.Cluster/Attach")
    assert samples[("headwater_master_grpc_received_messages_total", attach)] == 1.0
    assert samples[("headwater_master_grpc_received_bytes_total", attach)] == 20.0
    assert samples[("headwater_master_grpc_sent_messages_total", attach)] == 3.0
    assert samples[("headwater_master_grpc_sent_bytes_total", attach)] == 400.0
    assert types["headwater_master_grpc_sent_bytes"] == "counter"


def test_metrics_needs_a_viewers_token(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        await _says(await client.get("/metrics"), 401, "no token")
        await _says(
            await client.get("/metrics", headers=_bearer("nobody.secret")),
            401,
            "unknown or revoked token",
        )
        resp = await client.get("/metrics", headers=_bearer(tokens["viewer"]))
        assert resp.status == 200
        assert resp.headers["Content-Type"] == CONTENT_TYPE_LATEST
        names = {f.name for f in text_string_to_metric_families(await resp.text())}
        assert names == set()  # a master with no topology and no node

    _run(tmp_path, body)
