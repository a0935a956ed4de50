"""Edge to cloud: the IoT example across a master, a worker and two agents with a real broker.

Edge components run in the agents' processes and cloud components in the
worker's; each agent's subgraph is its own checkpoint domain, joined to the
cloud by its durable outbox, an outbound uplink and sequence numbers.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import psutil
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from headwater.common._loader import load_topology
from headwater.common.plan import cloud_part, edge_part, task_ids

from ._daemons import Daemons
from ._support import EXAMPLES, wait_for
from .test_iot import MALFORMED, SENSORS, _expected, _site_rows

pytestmark = pytest.mark.cluster
PIPELINE = EXAMPLES / "iot" / "pipeline.py"


class Sensors:
    """A publisher of the example's readings (QoS 1), site by site."""

    def __init__(self, host: str, port: int) -> None:
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="sensors")
        self.client.connect(host, port)
        self.client.loop_start()

    def publish(self, messages: list[tuple[str, bytes]]) -> None:
        for topic, payload in messages:
            self.client.publish(topic, payload, qos=1).wait_for_publish(10)

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def sensors(mosquitto: tuple[str, int]) -> Iterator[Sensors]:
    s = Sensors(*mosquitto)
    yield s
    s.close()


def _node(daemons: Daemons, name: str) -> dict[str, Any]:
    return next(n for n in daemons.api("/api/v1/nodes") if n["id"] == name)


def _instances(proc: psutil.Process) -> dict[int, int]:
    """Instance processes under a daemon: task id -> PID."""
    out: dict[int, int] = {}
    for child in proc.children(recursive=True):
        try:
            cmd = child.cmdline()
        except psutil.NoSuchProcess:
            continue
        if "headwater.common.runtime.instance" in cmd:
            out[int(cmd[cmd.index("--task") + 1])] = child.pid
    return out


def _dead_letters(out: Path) -> list[list[Any]]:
    rows: list[list[Any]] = []
    d = out / "dead_letters"
    for f in sorted(d.glob("part-*.jsonl")) if d.exists() else []:
        rows += [json.loads(line) for line in f.read_text().splitlines()]
    return rows


def _start_cluster(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path, *agent_args: str
) -> tuple[psutil.Process, dict[str, psutil.Process], Path]:
    host, port = mosquitto
    out = tmp_path / "out"
    daemons.start_master()
    worker = daemons.start_worker("w1", env={"IOT_OUT": str(out)})
    agents = {
        site: daemons.start_agent(
            f"gw-{site}",
            "--master",
            daemons.grpc,
            "--label",
            f"site={site}",
            "--mqtt",
            f"{host}:{port}",
            "--topic",
            f"sensors/{site}/#",
            *agent_args,
        )
        for site in ("site0", "site1")
    }
    wait_for(lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 3, 30,
             "the worker and both agents online")  # fmt: skip
    daemons.cli("submit", str(PIPELINE))
    return worker, agents, out


def test_iot_example_runs_across_worker_and_two_agents(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    worker, agents, out = _start_cluster(daemons, mosquitto, tmp_path)
    wait_for(lambda: all(_node(daemons, f"gw-{s}")["metrics"].get("mqtt_connected") == 1.0
                         and _node(daemons, f"gw-{s}")["uplinks"].get("iot", {}).get("connected")
                         for s in ("site0", "site1")), 60,
             "both agents subscribed and their uplinks open")  # fmt: skip

    readings = list(SENSORS["readings"](2, 3, 40))
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    messages[50:50] = [("sensors/site1/bad", m) for m, _ in MALFORMED]
    sensors.publish(messages)

    expected = _expected([r for _, r in readings])
    wait_for(lambda: len(_dead_letters(out)) == len(MALFORMED), 90, "the dead letters")
    wait_for(lambda: _site_rows(out / "site_windows") == expected, 90,
             "every closed window of both sites at the cloud sink")  # fmt: skip
    assert len(expected) == 2 * 3  # 2 sites x 3 closed windows
    reasons = sorted(d[0] for d in _dead_letters(out))
    for (_payload, reason), got in zip(sorted(MALFORMED, key=lambda m: m[1]), reasons,
                                       strict=True):  # fmt: skip
        assert reason in got
    assert all(d[1] == "sensors/site1/bad" for d in _dead_letters(out))

    # where everything ran, by PID: edge components under each agent, cloud ones under the worker
    full = load_topology(PIPELINE)
    edge_ids = task_ids(edge_part(full, {"site": "site0"}))
    edge_components = {t: c for c, ts in edge_ids.items() for t in ts}
    for site, agent in agents.items():
        here = _instances(agent)
        assert sorted(edge_components[t] for t in here) == sorted(
            ["readings", "parse", "dedup", "smooth", "anomaly", "__outbox__parse",
             "__outbox__anomaly"]
        ), site  # fmt: skip
    cloud_ids = task_ids(cloud_part(full))
    cloud_components = {t: c for c, ts in cloud_ids.items() for t in ts}
    on_worker = _instances(worker)
    assert sorted(cloud_components[t] for t in on_worker) == sorted(
        ["parse", "anomaly", "windows", "site", "site_windows", "dead_letters"]
    )  # the two receivers stand in for the edge components under their names
    master_pids = {int(m["pid"]) for m in
                   daemons.api("/api/v1/topologies/iot/metrics")["tasks"].values()}  # fmt: skip
    assert master_pids == set(on_worker.values())
    for agent in agents.values():
        assert not master_pids & set(_instances(agent).values())
    # the outboxes drain once the cloud has checkpointed everything
    wait_for(lambda: all(_node(daemons, f"gw-{s}")["backlog_batches"] == 0
                         for s in ("site0", "site1")), 30, "the outboxes empty")  # fmt: skip
