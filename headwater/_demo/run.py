"""``headwater demo``: the IoT path on one machine, every piece real.

A broker (Mosquitto when installed, an embedded amqtt broker otherwise),
simulated sensors on two sites publishing JSON readings with the odd
malformed one, and the exactly-once IoT example on the product's daemons:
``headwater master``, a ``headwater worker`` and one ``headwater agent`` per
site. Each agent ingests its site's topics into its durable log and runs
the edge half (parse with dead letters, dedup, smoothing, anomalies) as its
own checkpoint domain; the worker runs the cloud half (event-time windows,
per-site aggregates, sinks) on what the agents' uplinks deliver.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from headwater.common._package import build_package
from headwater.common.connectors import manifests, read_key_value_sink
from headwater.common.runtime._procs import spawn, terminate

from .loop import SparkLoop
from .sensors import readings

# the IoT example, shipped in the package (headwater/examples links to examples/)
PIPELINE = Path(__file__).resolve().parents[1] / "examples" / "iot" / "pipeline.py"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_broker(workdir: Path) -> tuple[int, Any, str]:
    """Mosquitto if installed (unless HEADWATER_DEMO_BROKER=embedded), else amqtt."""
    port = _free_port()
    mosquitto = shutil.which("mosquitto") or (
        "/usr/sbin/mosquitto" if os.path.exists("/usr/sbin/mosquitto") else None
    )
    if mosquitto and os.environ.get("HEADWATER_DEMO_BROKER") != "embedded":
        conf = workdir / "mosquitto.conf"
        conf.write_text(
            f"listener {port} 127.0.0.1\nallow_anonymous true\n"
            "persistence false\nmax_queued_messages 0\n"
        )
        proc = spawn(["-c", str(conf)], log_path=str(workdir / "broker.log"), executable=mosquitto)
        kind = "Mosquitto"
    else:
        proc = spawn(
            ["-m", "headwater._demo.broker", "--port", str(port)],
            log_path=str(workdir / "broker.log"),
        )
        kind = "embedded broker (amqtt)"
    deadline = time.monotonic() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return port, proc, kind
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"the MQTT broker did not start; see {workdir}/broker.log"
                ) from None
            time.sleep(0.05)


STEP_MS = 5_000  # the demo's clock runs fast: a reading is 5 s of event time, published 5 a second


def publish_forever(port: int, stop: threading.Event, rate_per_sensor: float = 5.0) -> None:
    """Six sensors on two sites, ``rate_per_sensor`` readings/s each, and a broken one."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="headwater-demo-sensors")
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        batch = 6
        for i, (topic, reading) in enumerate(readings(2, 3, 1_000_000, step_ms=STEP_MS)):
            if stop.is_set():
                return
            client.publish(topic, json.dumps(reading), qos=1)
            if i % 97 == 42:  # a sensor with a broken firmware
                client.publish("sensors/site1/broken", b'{"site": "site1", "value": "hot"}', qos=1)
            if i % batch == batch - 1:
                stop.wait(1.0 / rate_per_sensor)
    finally:
        client.disconnect()
        client.loop_stop()


def dead_letters(out: Path) -> int:
    """How many dead letters the landing zone has committed (its manifests' row counts)."""
    return sum(m["rows"] for m in manifests(out / "landing", "dead_letters"))


def get_json(url: str, token: str = "") -> Any:
    """GET ``url``'s JSON, sending ``token`` (a master's REST API needs one) if given."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=5) as r:
        return json.loads(r.read())


class Demo:
    """Master, a worker, two agents (one per site), a broker and sensors, as real processes."""

    SITES = ("site0", "site1")

    def __init__(self, workdir: Path | None = None) -> None:
        self.work = workdir or Path(tempfile.mkdtemp(prefix="hw-demo-"))
        self.out = self.work / "out"
        self.procs: list[subprocess.Popen[bytes]] = []
        self.stop_sensors = threading.Event()
        self.sensors: threading.Thread | None = None
        self.http = self.grpc = ""
        self.token = ""  # the admin token the master made: the demo submits with it
        self.loop: SparkLoop | None = None  # rollups, training and rollout, once it runs

    def _daemon(self, name: str, *args: str, env: dict[str, str] | None = None) -> None:
        self.procs.append(
            spawn(["-m", "headwater", *args], env=env, log_path=str(self.work / f"{name}.log"))
        )

    def _join_token(self, role: str, info: dict[str, Any]) -> str:
        """Throwaway credentials: each node of the demo enrols with a join token of its own."""
        from headwater.cloud.master import join_token_on_host

        return join_token_on_host(self.work / "master", role, info, ttl_s=600)

    def start(self) -> None:
        port, broker, kind = start_broker(self.work)
        self.procs.append(broker)
        print(
            f"  MQTT: {kind} on 127.0.0.1:{port}; 6 sensors on 2 sites publish to "
            "sensors/<site>/<sensor>",
            flush=True,
        )
        ready = self.work / "master.json"
        self._daemon(
            "master",
            "master",
            "--host",
            "127.0.0.1",
            "--port",
            str(_free_port()),
            "--http-port",
            str(_free_port()),
            "--state-dir",
            str(self.work / "master"),
            "--ready-file",
            str(ready),
            "--no-advertise",
            "--join-port",
            str(_free_port()),
        )
        info = wait_until(
            lambda: ready.exists() and json.loads(ready.read_text()), "starting the master"
        )
        self.grpc, self.http = info["grpc"], info["http"]
        self.token = (self.work / "master" / "admin.token").read_text().strip()
        self._daemon(
            "worker-1",
            "worker",
            "--master",
            self.grpc,
            "--id",
            "worker-1",
            "--workdir",
            str(self.work / "worker-1"),
            "--join",
            self._join_token("worker", info),
            env={"IOT_OUT": str(self.out)},
        )
        for site in self.SITES:
            self._daemon(
                f"gw-{site}",
                "agent",
                "--master",
                self.grpc,
                "--id",
                f"gw-{site}",
                "--label",
                f"site={site}",
                "--mqtt",
                f"127.0.0.1:{port}",
                "--topic",
                f"sensors/{site}/#",
                "--workdir",
                str(self.work / f"gw-{site}"),
                "--join",
                self._join_token("agent", info),
            )
        wait_until(
            lambda: len([n for n in self.nodes() if n["online"]]) == 3,
            "the worker and both agents attaching",
        )
        data, entry = build_package(str(PIPELINE))
        req = urllib.request.Request(
            f"{self.http}/api/v1/topologies?{urlencode({'entry': entry, 'containers': 1})}",
            data=data,
            method="POST",
            headers={"Authorization": f"Bearer {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=60) as r:
            json.loads(r.read())
        self.sensors = threading.Thread(
            target=publish_forever, args=(port, self.stop_sensors), daemon=True
        )
        self.sensors.start()
        print("running 'iot' on a master, a cloud worker and 2 edge agents", flush=True)
        print(
            "  edge (each agent, its own checkpoint domain): readings -> parse -> dedup -> "
            "smooth -> anomaly, uplinked from a durable outbox",
            flush=True,
        )
        print("  cloud (the worker): 10 s windows per sensor -> per site -> sinks", flush=True)
        print(
            f"  master API: {self.http}/api/v1/topologies/iot (also /metrics, /checkpoints)",
            flush=True,
        )
        print(f"  agents and their backlogs: {self.http}/api/v1/nodes", flush=True)
        admin = self.work / "master" / "admin.token"
        print(f"  its token: export HEADWATER_TOKEN=$(cat {admin})", flush=True)
        print(
            f"  outputs (kept after the demo): {self.out / 'site_windows'} (per-site "
            f"windows), {self.out / 'landing'} (readings, sensor_windows, dead_letters: Parquet)",
            flush=True,
        )
        print(
            f"  read them: headwater read {self.out / 'site_windows'}, "
            f"headwater read --follow {self.out / 'landing' / 'readings'}",
            flush=True,
        )
        print(f"  logs: {self.work}", flush=True)
        self.loop = SparkLoop(self.work, self.out, self.http, admin, _say)
        self.loop.start()
        print("  stop with Ctrl-C", flush=True)

    def tick(self) -> None:
        if self.loop is not None:
            self.loop.step()

    def nodes(self) -> list[dict[str, Any]]:
        return get_json(f"{self.http}/api/v1/nodes", self.token)  # type: ignore[no-any-return]

    def report(self) -> None:
        latest: dict[str, list[Any]] = {}
        for row in read_key_value_sink(self.out / "site_windows").values():
            if row[1] not in latest or row[2] > latest[row[1]][2]:
                latest[row[1]] = row
        for site, row in sorted(latest.items()):
            when = time.strftime("%H:%M:%S", time.gmtime(row[2] / 1000))
            print(
                f"  {site} window {when}: {row[3]} sensors, {row[4]} readings, mean "
                f"{row[5]:.2f}, min {row[6]:.2f}, max {row[7]:.2f}, anomalies {row[8]}",
                flush=True,
            )
        agents = [
            f"{n['id']} {'online' if n['online'] else 'OFFLINE'} backlog "
            f"{n['backlog_batches']} batches"
            for n in self.nodes()
            if n["kind"] == "agent"
        ]
        cp = get_json(f"{self.http}/api/v1/topologies/iot/checkpoints", self.token)
        print(
            f"  dead letters so far: {dead_letters(self.out)} | {' | '.join(agents)} | "
            f"cloud checkpoints: latest complete {cp['latest_complete']}",
            flush=True,
        )
        if self.loop is not None:
            self.loop.report()

    def stop(self) -> None:
        if self.loop is not None:
            self.loop.stop()
        self.stop_sensors.set()
        if self.sensors is not None:
            self.sensors.join(5)
        terminate(list(reversed(self.procs)), 15.0)


def _say(line: str) -> None:
    print(line, flush=True)


def wait_until(cond: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    """``cond()``'s first true value (an OSError counts as not yet); RuntimeError on timeout."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = cond()
        except OSError:
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise RuntimeError(f"{what}: not within {timeout:.0f}s")
