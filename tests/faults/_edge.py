"""One site of the IoT example under faults: a master, a worker and the agent gw-site0.

Readings are the example's (three sensors of site0, one a second each); what the cloud
computed is compared with what the pipeline's own rules give offline, window by window,
so a reading lost or counted twice shows as a count that differs.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from .._ports import free_port
from ..integration._daemons import Daemons
from ..integration._support import wait_for
from ..integration.test_iot import SENSORS, _expected, _site_rows

PIPELINE = Path(__file__).resolve().parents[2] / "examples" / "iot" / "pipeline.py"
AGENT = "gw-site0"


def readings(count: int) -> list[tuple[str, dict[str, Any]]]:
    """``count`` seconds of site0's three sensors (3 * ``count`` readings)."""
    return list(SENSORS["readings"](1, 3, count))


def publish(
    address: tuple[str, int],
    batch: list[tuple[str, dict[str, Any]]],
    qos: int = 1,
    client_id: str = "sensors",
) -> None:
    """Publish and wait until the broker has every message (QoS 1: its PUBACK)."""
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=client_id)
    client.connect(*address)
    client.loop_start()
    try:
        infos = [client.publish(t, json.dumps(r), qos=qos) for t, r in batch]
        for info in infos:
            info.wait_for_publish(30)
    finally:
        client.disconnect()
        client.loop_stop()


class Site:
    def __init__(self, daemons: Daemons, broker: tuple[str, int], tmp_path: Path) -> None:
        self.daemons = daemons
        self.broker = broker
        self.out = tmp_path / "out"
        self.status_port = free_port()
        self.workdir = tmp_path / AGENT
        self.agent: Any = None

    def start_cloud(self) -> None:
        self.daemons.start_master()
        self.daemons.start_worker("w1", env={"IOT_OUT": str(self.out)})

    def agent_args(self, *more: str, master: str | None = None) -> list[str]:
        """``master``: the agent's route to the cloud (a LinkProxy: the master and the
        workers' ingress through it)."""
        host, port = self.broker
        route = ["--ingress-proxy", master] if master else []
        return [
            "--master",
            master or self.daemons.grpc,
            *route,
            "--label",
            "site=site0",
            "--mqtt",
            f"{host}:{port}",
            "--topic",
            "sensors/site0/#",
            "--status-port",
            str(self.status_port),
            "--workdir",
            str(self.workdir),
            *more,
        ]

    def start_agent(self, *more: str, master: str | None = None) -> None:
        self.agent = self.daemons.start_agent(AGENT, *self.agent_args(*more, master=master))

    def stop_agent(self) -> None:
        self.agent.terminate()
        self.agent.wait(30)

    def submit(self) -> None:
        self.daemons.cli("submit", str(PIPELINE))

    def start(self, *more: str, master: str | None = None) -> None:
        """Cloud, agent, the example submitted; returns once readings can flow."""
        self.start_cloud()
        self.start_agent(*more, master=master)
        wait_for(
            lambda: len([n for n in self.daemons.api("/api/v1/nodes") if n["online"]]) == 2,
            30,
            "the worker and the agent online",
        )
        self.submit()
        self.wait_flowing()

    def wait_flowing(self, timeout: float = 60) -> None:
        wait_for(
            lambda: (
                self.status()["metrics"].get("mqtt_connected") == 1.0
                and self.node()["uplinks"].get("iot", {}).get("connected")
            ),
            timeout,
            "the agent subscribed and its uplink open",
        )

    def status(self) -> dict[str, Any]:
        """The agent's own view; empty while it is not serving."""
        try:
            with urllib.request.urlopen(
                f"http://127.0.0.1:{self.status_port}/status", timeout=5
            ) as r:
                return json.loads(r.read())  # type: ignore[no-any-return]
        except OSError:
            return {"metrics": {}, "health": "", "reasons": []}

    def node(self) -> dict[str, Any]:
        nodes = self.daemons.api("/api/v1/nodes")
        return next((n for n in nodes if n["id"] == AGENT), {"uplinks": {}, "reasons": []})

    def metric(self, name: str) -> float:
        return float(self.status()["metrics"].get(name, -1.0))

    def windows(self) -> dict[str, list[Any]]:
        return {
            k: v for k, v in _site_rows(self.out / "site_windows").items() if k.startswith("site0/")
        }

    def wait_all(self, published: list[tuple[str, dict[str, Any]]], timeout: float = 120) -> float:
        """Wait until every closed window holds exactly its readings; return the seconds."""
        t0 = time.monotonic()
        expected = _expected([r for _, r in published])
        assert expected
        try:
            wait_for(
                lambda: self.windows() == expected,
                timeout,
                "every closed window, each reading counted once",
            )
        except AssertionError:
            lost, dup = tally(expected, self.windows())
            raise AssertionError(f"readings lost {lost}, counted twice {dup}") from None
        return time.monotonic() - t0

    def lost_and_duplicated(self, published: list[tuple[str, dict[str, Any]]]) -> dict[str, int]:
        """For ``_report.record``: readings lost and counted twice, from the windows."""
        lost, dup = tally(_expected([r for _, r in published]), self.windows())
        return {"readings": len(published), "lost": lost, "duplicated": dup}

    def reason(self, text: str, where: str = "both") -> str:
        """A health reason containing ``text`` at the agent's /status (and the master's view)."""
        mine = [r for r in self.status().get("reasons", []) if text in r]
        if where == "agent":
            return mine[0] if mine else ""
        theirs = [r for r in self.node().get("reasons", []) if text in r]
        return mine[0] if mine and theirs else ""


def tally(expected: dict[str, list[Any]], got: dict[str, list[Any]]) -> tuple[int, int]:
    """Readings lost and counted twice, from the windows' counts (column 4)."""
    lost = dup = 0
    for key, row in expected.items():
        have = got.get(key, [0] * 9)[4]
        lost += max(0, row[4] - have)
        dup += max(0, have - row[4])
    return lost, dup


class Publisher(threading.Thread):
    """Publishes readings at ``rate`` per second (QoS 1) through broker outages: a reading
    the broker did not acknowledge is published again once it is back (the pipeline drops
    the repeat by its sequence number)."""

    def __init__(
        self, address: tuple[str, int], batch: list[tuple[str, dict[str, Any]]], rate: float
    ) -> None:
        super().__init__(name="publisher", daemon=True)
        self.batch, self.rate = batch, rate
        self.sent = self.retries = 0
        self.stop = threading.Event()
        self.client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="steady-sensors")
        self.client.reconnect_delay_set(min_delay=1, max_delay=1)
        self.client.connect(*address)
        self.client.loop_start()

    def run(self) -> None:
        start = time.monotonic()
        try:
            for i, (topic, reading) in enumerate(self.batch):
                while not self.stop.wait(max(0.0, start + i / self.rate - time.monotonic())):
                    try:
                        info = self.client.publish(topic, json.dumps(reading), qos=1)
                        info.wait_for_publish(2)
                        if info.is_published():
                            break
                    except (RuntimeError, ValueError):
                        pass  # not connected: the broker is away
                    self.retries += 1
                    self.stop.wait(0.2)
                else:
                    return
                self.sent += 1
        finally:
            self.client.disconnect()
            self.client.loop_stop()
