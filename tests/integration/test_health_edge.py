"""Issue 35's edge scenario for the health manager, with real daemons and a real broker.

A master (sampling every second), a worker and an agent (``--footprint small``: its edge
tasks are threads, ``--max-edge-tasks 4``: its footprint limit) with a Mosquitto broker.
``topologies/edge_load.py``: on the agent, the MQTT ingest log -> ``slow``, which costs COST s
per record (one task keeps up with about 1 / COST records/s), -> the cloud's sink. Sensors
publish RATE records/s (QoS 1), which one ``slow`` task cannot keep up with, so the agent's
ingest backlog grows while its uplink is up. The health manager (``auto``) must report
``edge-overload`` on ``slow`` with its rates and the growing backlog, and rescale it on the
agent, once, to the room the agent's footprint limit leaves (4 tasks less the subgraph's
spout and outbox sink: 2, below DS2's target of 3 at the policy's 50 % utilization); after
the switch the backlog halves while the sensors go on, and every record reaches the cloud's
sink exactly once.

Measured (``PYTHONPATH=$PWD python -m pytest tests/integration/test_health_edge.py -s``, three
runs on a shared 2-core machine, 31-34 s each): diagnosed 7.6-8.1 s after the first record
(ingest 60.1-60.3 records/s, ``slow`` 46.9-50.8 records/s at 100 % busy, the backlog 157-182
and growing 16.9-17.1 records/s, DS2's target 3, the agent's room 2), the edit made by
8.6-9.0 s and running on the agent by 14.0-14.2 s, the backlog (330-429 then) halved by
16.2-18.2 s, 967-1,092 records each once at the sink. The test prints an ``EDGE`` line with
the diagnosis and these times (``-s``).
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from ._daemons import Daemons
from ._support import TOPOLOGIES, committed_rows, wait_for

pytestmark = pytest.mark.cluster
COST = 0.02  # s per record: one task keeps up with about 50 records/s
RATE = 60.0  # records/s published: 1.2 tasks' worth, 3 at the policy's 50 % utilization
MAX_EDGE_TASKS = 4  # the agent's footprint limit: room for 2 ``slow`` tasks


class Sensors(threading.Thread):
    """Publishes {"seq": n} at ``RATE`` per second (QoS 1) until stopped; ``sent`` counts."""

    def __init__(self, host: str, port: int) -> None:
        super().__init__(name="sensors", daemon=True)
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="sensors")
        self.client.connect(host, port)
        self.client.loop_start()
        self.sent, self.done = 0, threading.Event()

    def run(self) -> None:
        start = time.monotonic()
        while not self.done.wait(0.02):
            due = int((time.monotonic() - start) * RATE)
            while self.sent < due and not self.done.is_set():
                payload = json.dumps({"seq": self.sent}).encode()
                self.client.publish("sensors/s0/t", payload, qos=1).wait_for_publish(10)
                self.sent += 1

    def stop(self) -> None:
        self.done.set()
        self.join()
        self.client.disconnect()
        self.client.loop_stop()


def _agent(daemons: Daemons) -> dict[str, float]:
    node = next(n for n in daemons.api("/api/v1/nodes") if n["id"] == "gw")
    return dict(node["metrics"]) if node["online"] else {}


def test_an_edge_overload_is_reported_and_rescaled_on_the_agent_within_its_footprint(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    out = tmp_path / "out"
    host, port = mosquitto
    daemons.start_master(extra=("--health-interval", "1"))
    daemons.start_worker("w1", env={"HW_TEST_OUT": str(out)})  # COST: the topology's default
    daemons.start_agent(
        "gw",
        *("--master", daemons.grpc, "--mqtt", f"{host}:{port}", "--topic", "sensors/#"),
        *("--footprint", "small", "--max-edge-tasks", str(MAX_EDGE_TASKS)),
    )
    wait_for(
        lambda: len([n for n in daemons.api("/api/v1/nodes") if n["online"]]) == 2, 30, "nodes"
    )
    daemons.cli("submit", str(TOPOLOGIES / "edge_load.py"))
    wait_for(
        lambda: (
            _agent(daemons).get("mqtt_connected") == 1.0
            and any(k.startswith("edge_task:edgeload/slow/") for k in _agent(daemons))
        ),
        60,
        "the agent subscribed and its edge tasks reporting",
    )
    sensors = Sensors(host, port)
    sensors.start()
    t0, seen = time.monotonic(), {}  # seconds from the first record to each step
    try:
        found: dict[str, Any] = {}

        def diagnosed() -> bool:
            report = daemons.api("/api/v1/topologies/edgeload/health")
            edge = [d for d in report["diagnoses"] if d["kind"] == "edge-overload"]
            found.update(edge[0] if edge else {})
            return bool(edge)

        wait_for(diagnosed, 45, "an edge-overload diagnosis", interval=0.5)
        seen["diagnosed_s"] = round(time.monotonic() - t0, 1)
        assert found["component"] == "slow", found
        evidence = found["evidence"]
        # the rates: one task at most 1 / COST records/s, busy nearly all the time
        assert 0 < evidence["processed"] <= 1.2 / COST and evidence["busy"] >= 0.9, found
        assert evidence["backlog"] > 0 and evidence["backlog_growth"] >= 1.0, found
        assert evidence["parallelism"] == 1 and evidence["cap"] == MAX_EDGE_TASKS - 2, found
        assert abs(evidence["ingest_rate"] - RATE) <= 0.2 * RATE, found  # the log's end
        assert evidence["target"] >= 2, found  # DS2, from the ingest rate
        assert "slow" in found["reason"] and "backlog grows" in found["reason"], found

        def revisions() -> list[dict[str, Any]]:
            got: list[dict[str, Any]] = daemons.api("/api/v1/topologies/edgeload/revisions")[
                "revisions"
            ]
            return got

        ours = wait_for(
            lambda: [r for r in revisions() if r["author"] == "health-manager"],
            30,
            "the health manager's edit",
        )
        rev = ours[0]["revision"]
        seen["edit_s"] = round(time.monotonic() - t0, 1)
        wait_for(
            lambda: (
                _agent(daemons).get("revision:edgeload") == rev
                and len(
                    {k.split(":")[1] for k in _agent(daemons) if "edge_task:edgeload/slow/" in k}
                )
                == MAX_EDGE_TASKS - 2
            ),
            60,
            "the agent running the rescale, both tasks reporting",
        )
        seen["switched_s"] = round(time.monotonic() - t0, 1)
        # the backlog stops growing: with 2 tasks the agent drains it while RATE goes on
        start = _agent(daemons)["ingest_backlog:edgeload"]
        wait_for(
            lambda: _agent(daemons).get("ingest_backlog:edgeload", start) < start / 2,
            45,
            f"the ingest backlog ({start:.0f}) halved while the sensors go on",
        )
        seen["halved_s"] = round(time.monotonic() - t0, 1)
    finally:
        sensors.stop()
    n = sensors.sent
    report = daemons.api("/api/v1/topologies/edgeload/health")
    history = revisions()
    print(
        "EDGE",
        json.dumps({"diagnosis": found, "sent": n, "backlog_at_switch": start, **seen}),
        json.dumps([(r["revision"], r["author"], r["status"], r["reason"]) for r in history]),
    )
    # one live edit, by the health manager, with its reason, applied on the agent too
    assert len(history) == 2 and history[1]["author"] == "health-manager", history
    ours = [r for r in history if r["author"] == "health-manager"]
    assert ours[0]["status"] == "applied" and "backlog grows" in ours[0]["reason"], ours
    taken = [t for t in report["taken"] if t["action"]["kind"] == "rescale"]
    assert len(taken) == 1 and taken[0]["action"]["parallelism"] == MAX_EDGE_TASKS - 2, taken
    assert taken[0]["outcome"] == "applied" and taken[0]["revision"] == rev, taken
    reports = [t for t in report["taken"] if t["action"]["kind"] == "report"]
    assert reports and reports[0]["action"]["component"] == "slow", report["taken"]
    # every record published reached the cloud's sink once
    wait_for(lambda: len(committed_rows(out / "sink")) >= n, 60, f"all {n} records at the sink")
    rows = committed_rows(out / "sink")
    assert sorted(r[1] for r in rows) == list(range(n)), "gaps or duplicates"
