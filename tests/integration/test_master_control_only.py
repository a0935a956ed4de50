"""The master is control only: no edge record passes through it (issue 14, acceptance 3).

The IoT example runs across a master, a worker and two agents. The master's gRPC server
counts the bytes of every message it takes and gives, per method (``/api/v1/traffic``);
the cloud stream manager counts what its ingress took from the agents. While the
readings flow, the ingress carries them and the master's methods carry a small fraction
of that: no method of the master is an uplink, its command streams (``Watch``) carry
checkpoint orders, not batches, and no command can hold a batch any more.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.common.wire.proto import runtime_pb2 as pb

from .._ports import free_port
from ._daemons import Daemons
from ._support import wait_for
from .test_edge_cloud import SITES, Sensors, _agent_args, _start_cluster, sensors
from .test_iot import SENSORS, _expected, _site_rows

pytestmark = pytest.mark.cluster
__all__ = ["sensors"]  # the fixture
PAD = "-" + "x" * 1000  # a long sensor name: every reading carries it to the cloud


def _ingress_bytes(daemons: Daemons) -> float:
    containers = daemons.api("/api/v1/topologies/iot/metrics")["containers"]
    return sum(float(m.get("ingress_bytes", 0.0)) for m in containers.values())


def _received_rows(daemons: Daemons) -> float:
    tasks = daemons.api("/api/v1/topologies/iot/metrics")["tasks"]
    return sum(float(m.get("user:uplink_rows", 0.0)) for m in tasks.values())


def _traffic(daemons: Daemons) -> dict[str, Any]:
    return daemons.api("/api/v1/traffic")  # type: ignore[no-any-return]


def _delta(after: dict[str, Any], before: dict[str, Any], method: str, key: str) -> int:
    was = before["methods"].get(method, {}).get(key, 0)
    return int(after["methods"].get(method, {}).get(key, 0) - was)


def test_no_edge_record_passes_through_the_master(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    # the contract itself: no command carries a batch, the master serves no uplink
    assert "uplink" not in pb.Command.DESCRIPTOR.fields_by_name
    cluster = pb.DESCRIPTOR.services_by_name["Cluster"].methods_by_name
    assert "Uplink" not in cluster and "LocateReceiver" in cluster
    assert (
        "SendUplinkFeedback" not in pb.DESCRIPTOR.services_by_name["TopologyMaster"].methods_by_name
    )

    status = {s: free_port() for s in SITES}
    daemons.start_master()
    args = {
        s: _agent_args(mosquitto, s, daemons.grpc, "--status-port", str(status[s])) for s in SITES
    }
    _worker, _agents, out = _start_cluster(daemons, mosquitto, tmp_path, args, master=False)

    readings = list(SENSORS["readings"](2, 3, 150))  # 900 readings
    for _, r in readings:
        r["sensor"] += PAD
    before, ingress_before = _traffic(daemons), _ingress_bytes(daemons)
    sensors.publish([(t, json.dumps(r).encode()) for t, r in readings])
    expected = _expected([r for _, r in readings])
    wait_for(
        lambda: _site_rows(out / "site_windows") == expected,
        120,
        "every closed window of both sites at the cloud sink",
    )
    wait_for(
        lambda: _received_rows(daemons) >= len(readings),
        60,
        "every reading taken by the cloud receivers",
    )
    # the readings went by the ingress: at least their sensor names' worth
    least = len(readings) * len(PAD)
    wait_for(
        lambda: _ingress_bytes(daemons) - ingress_before >= least,
        30,
        "the ingress's count of them, reported",
    )
    after, carried = _traffic(daemons), _ingress_bytes(daemons) - ingress_before

    methods = set(after["methods"])
    assert not [m for m in methods if "Uplink" in m], methods
    assert "/headwater.v1.Cluster/LocateReceiver" in methods  # where to go: asked, not relayed
    # the command streams carry orders: a small fraction of what the ingress carried
    watch = _delta(after, before, "/headwater.v1.TopologyMaster/Watch", "bytes_out")
    assert watch < carried / 20, (watch, carried)
    # and nothing the master took or gave grew with the readings
    into = int(after["bytes_in"] - before["bytes_in"])
    out_of = int(after["bytes_out"] - before["bytes_out"])
    assert into < carried / 4 and out_of < carried / 4, (into, out_of, carried, after)
