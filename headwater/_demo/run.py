"""``headwater demo``: the IoT path on one machine, every piece real.

A broker (Mosquitto when installed, an embedded amqtt broker otherwise),
simulated sensors publishing JSON readings with the odd malformed one, the
agent's MQTT ingestion into a durable log, and the exactly-once IoT pipeline
(parse with dead letters, dedup, smoothing, anomalies, event-time windows,
per-site aggregates) on a local cluster of two containers.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater.cloud.local import LocalCluster
from headwater.common.runtime._procs import spawn, terminate
from headwater.edge import MqttIngest, MqttSource

from .sensors import readings

PIPELINE = Path(__file__).with_name("iot_pipeline.py")


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
        conf.write_text(f"listener {port} 127.0.0.1\nallow_anonymous true\n"
                        "persistence false\nmax_queued_messages 0\n")  # fmt: skip
        proc = spawn(["-c", str(conf)], log_path=str(workdir / "broker.log"),
                     executable=mosquitto)  # fmt: skip
        kind = "Mosquitto"
    else:
        proc = spawn(["-m", "headwater._demo.broker", "--port", str(port)],
                     log_path=str(workdir / "broker.log"))  # fmt: skip
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


def publish_forever(port: int, stop: threading.Event, rate_per_sensor: float = 5.0) -> None:
    """Six sensors on two sites, ``rate_per_sensor`` readings/s each, and a broken one."""
    import paho.mqtt.client as mqtt
    from paho.mqtt.enums import CallbackAPIVersion

    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="headwater-demo-sensors")
    client.connect("127.0.0.1", port)
    client.loop_start()
    try:
        batch = 6
        for i, (topic, reading) in enumerate(readings(2, 3, 1_000_000)):
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


def make_report(out: Path) -> Callable[[LocalCluster], None]:
    def report(cluster: LocalCluster) -> None:
        from rocksdict import AccessType, Options, Rdict

        from headwater.common.wire import decode

        rows: dict[str, list[Any]] = {}
        for db_path in sorted((out / "site_windows").glob("task-*")):
            try:
                db = Rdict(str(db_path), Options(raw_mode=True),
                           access_type=AccessType.read_only())  # fmt: skip
            except Exception:
                continue
            try:
                for k, v in db.items():
                    rows[str(decode(k))] = decode(v)  # type: ignore[arg-type]
            finally:
                db.close()
        latest: dict[str, list[Any]] = {}
        for row in rows.values():
            if row[1] not in latest or row[2] > latest[row[1]][2]:
                latest[row[1]] = row
        tasks = cluster.metrics()["tasks"].values()
        dead = sum(m.get("user:dead_letter", 0) for m in tasks)
        for site, row in sorted(latest.items()):
            when = time.strftime("%H:%M:%S", time.gmtime(row[2] / 1000))
            print(f"  {site} window {when}: {row[3]} sensors, {row[4]} readings, mean "
                  f"{row[5]:.2f}, min {row[6]:.2f}, max {row[7]:.2f}, anomalies {row[8]}",
                  flush=True)  # fmt: skip
        print(f"  dead letters so far: {int(dead)} (reasons in {out / 'dead_letters'})",
              flush=True)  # fmt: skip

    return report


def prepare(workdir: Path | None = None) -> tuple[LocalCluster, Callable[[], None], Callable[
        [LocalCluster], None]]:  # fmt: skip
    """Start broker, ingestion and sensors; return the cluster to run, a cleanup, a reporter."""
    work = workdir or Path(tempfile.mkdtemp(prefix="hw-demo-"))
    port, broker, kind = start_broker(work)
    ingest = MqttIngest(MqttSource("127.0.0.1", port, client_id="headwater-demo-agent",
                                   partitions=2), work / "ingest")  # fmt: skip
    ingest.start()
    stop = threading.Event()
    sensors = threading.Thread(target=publish_forever, args=(port, stop), daemon=True)
    sensors.start()
    out = work / "out"
    env = {"IOT_LOG": str(work / "ingest"), "IOT_OUT": str(out), "IOT_PARTITIONS": "2"}
    cluster = LocalCluster(PIPELINE, containers=2, env=env)
    print(f"  MQTT: {kind} on 127.0.0.1:{port}; 6 sensors on 2 sites publish to sensors/#")
    print(f"  the agent's ingestion appends every reading to {work / 'ingest'} before acking")
    print(f"  outputs (kept after the demo): {out / 'site_windows'} (per-site windows), "
          f"{out / 'dead_letters'}")  # fmt: skip

    def cleanup() -> None:
        stop.set()
        sensors.join(5)
        ingest.stop()
        terminate([broker], 5.0)

    return cluster, cleanup, make_report(out)
