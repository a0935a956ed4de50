"""The edge agent daemon: discovery, registration with labels, MQTT ingestion, offline state."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from headwater.common.security import ClusterCA, JoinToken, TokenStore
from headwater.common.state import DurableLog

from .._ports import free_port
from ._daemons import Daemons
from ._support import wait_for

pytestmark = pytest.mark.cluster


def _agent(daemons: Daemons, name: str = "gw-north") -> dict[str, Any] | None:
    return next((n for n in daemons.api("/api/v1/nodes") if n["id"] == name), None)


def test_agent_attaches_with_labels_and_ingests_mqtt(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    host, port = mosquitto
    daemons.start_master()
    agent = daemons.start_agent(
        "gw-north",
        "--master",
        daemons.grpc,
        "--label",
        "site=north",
        "--label",
        "gpu=no",
        "--mqtt",
        f"{host}:{port}",
    )
    view = wait_for(
        lambda: (
            (a := _agent(daemons))
            and a["online"]
            and a["metrics"].get("mqtt_connected") == 1.0
            and a
        ),
        30,
        "the agent online with MQTT connected",
    )
    assert view["kind"] == "agent"
    assert view["labels"] == {"site": "north", "gpu": "no"}
    assert view["version"] == "0.1.0"
    assert (view["backlog_bytes"], view["backlog_batches"]) == (0, 0)
    listing = daemons.cli("nodes")
    assert "gw-north" in listing and "agent" in listing and "online" in listing
    assert "site=north" in listing and "gpu=no" in listing

    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="sensors")
    pub.connect(host, port)
    pub.loop_start()
    for i in range(50):
        pub.publish(f"sensors/t{i % 3}", json.dumps({"seq": i}), qos=1).wait_for_publish(10)
    pub.disconnect()
    pub.loop_stop()
    wait_for(
        lambda: (a := _agent(daemons)) and a["metrics"].get("mqtt_appended") == 50,
        30,
        "the readings in the agent's durable log",
    )

    agent.terminate()
    agent.wait(20)
    wait_for(lambda: (a := _agent(daemons)) and not a["online"], 15, "the agent offline")
    log = DurableLog(tmp_path / "gw-north" / "ingest" / "p0")
    try:
        assert len(log.read(0, 1000)) == 50
    finally:
        log.close()


def test_agent_finds_the_master_by_zeroconf(daemons: Daemons, netns_pair: tuple[str, str]) -> None:
    master_ns, agent_ns = netns_pair
    daemons.start_master(host="10.250.0.1", netns=master_ns)
    daemons.start_agent("gw-south", "--label", "site=south", netns=agent_ns)  # no --master
    view = wait_for(lambda: _agent(daemons, "gw-south"), 60, "the agent to find the master")
    assert view["online"] and view["labels"] == {"site": "south"}
    assert "found the master at 10.250.0.1:" in (daemons.tmp / "gw-south.log").read_text()


@pytest.mark.parametrize("master", ["given", "zeroconf"])
def test_an_agent_that_cannot_enrol_yet_stops_when_told(
    daemons: Daemons, netns_pair: tuple[str, str], tmp_path: Path, master: str
) -> None:
    """Its first start waits for a master to enrol with, which may never come (a closed port;
    no master on the LAN): SIGTERM ends that wait at once, with exit status 0."""
    _, agent_ns = netns_pair  # no master in either namespace
    ca = ClusterCA.open(tmp_path / "cluster")
    raw = TokenStore(tmp_path / "cluster" / "tokens.json").create("agent")
    token = str(JoinToken(free_port(), raw, ca.fingerprint))
    if master == "given":
        daemons.start_agent("gw-west", "--master", f"127.0.0.1:{free_port()}", "--join", token)
        waiting = "cannot enrol: cannot reach the master's join port"
    else:
        daemons.start_agent("gw-west", "--join", token, netns=agent_ns)
        waiting = "looking for one by zeroconf"
    log = daemons.tmp / "gw-west.log"
    wait_for(lambda: log.exists() and waiting in log.read_text(), 60, "the agent to wait")
    proc = daemons.procs[-1]
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0  # before, it waited on, until killed
    assert not (daemons.tmp / "gw-west" / "tls" / "node.pem").exists()
