"""MQTT ingestion against a real Mosquitto broker."""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from pathlib import Path

import paho.mqtt.client as mqtt
from paho.mqtt.enums import CallbackAPIVersion

from headwater.common.state import DurableLog
from headwater.common.wire import decode
from headwater.edge import MqttIngest, MqttSource

from .._ports import free_port
from ..integration._support import wait_for


def _publish(host: str, port: int, messages: list[tuple[str, bytes]]) -> None:
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="test-publisher")
    pub.connect(host, port)
    pub.loop_start()
    try:
        infos = [pub.publish(topic, payload, qos=1) for topic, payload in messages]
        for info in infos:
            info.wait_for_publish(10)
    finally:
        pub.disconnect()
        pub.loop_stop()


def _read_all(log_dir: Path, partitions: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for p in range(partitions):
        d = DurableLog(log_dir / f"p{p}")
        try:
            rows.extend(decode(r) for r in d.read(0, 1_000_000))
        finally:
            d.close()
    return rows


def _readings(n: int, sensors: int = 5) -> list[tuple[str, bytes]]:
    return [
        (f"sensors/s{i % sensors}", json.dumps({"seq": i // sensors, "v": i}).encode())
        for i in range(n)
    ]


def test_every_message_is_appended_before_it_is_acked(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    host, port = mosquitto
    ingest = MqttIngest(MqttSource(host, port, client_id="agent-1", partitions=2), tmp_path)
    ingest.start()
    try:
        wait_for(lambda: ingest.stats.connected, 10, "the subscription")
        _publish(host, port, _readings(500))
        wait_for(lambda: ingest.stats.acked == 500, 20, "500 acks")
        assert ingest.stats.appended == 500
    finally:
        ingest.stop()
    rows = _read_all(tmp_path, 2)
    assert len(rows) == 500
    seqs: dict[str, list[int]] = defaultdict(list)
    for topic, payload, received_ms in rows:
        assert isinstance(topic, str) and isinstance(payload, bytes)
        assert isinstance(received_ms, int)
        seqs[topic].append(json.loads(payload)["seq"])
    # each sensor's readings stay in order (one topic lives in one partition)
    assert seqs == {f"sensors/s{s}": list(range(100)) for s in range(5)}


def test_paused_ingest_acks_nothing_and_the_broker_keeps_the_backlog(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    host, port = mosquitto
    paused = threading.Event()
    paused.set()
    ingest = MqttIngest(
        MqttSource(host, port, client_id="agent-2"), tmp_path, should_pause=paused.is_set
    )
    ingest.start()
    try:
        wait_for(lambda: ingest.stats.connected, 10, "the subscription")
        _publish(host, port, _readings(300))
        wait_for(lambda: ingest.stats.received >= 20, 10, "the broker's in-flight window")
        assert ingest.stats.appended == ingest.stats.acked == 0
        assert ingest.stats.received <= 20  # unacknowledged: the broker holds the rest
        paused.clear()
        wait_for(lambda: ingest.stats.acked == 300, 20, "the backlog after resuming")
        assert ingest.stats.paused_s > 0
    finally:
        ingest.stop()
    assert len(_read_all(tmp_path, 1)) == 300  # exactly once: nothing lost, nothing twice


def test_unacknowledged_messages_come_back_to_a_new_session(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    host, port = mosquitto
    source = MqttSource(host, port, client_id="agent-3")
    first = MqttIngest(source, tmp_path / "first", should_pause=lambda: True)
    first.start()
    wait_for(lambda: first.stats.connected, 10, "the subscription")
    _publish(host, port, _readings(100))
    wait_for(lambda: first.stats.received >= 20, 10, "some deliveries")
    first.stop()  # nothing was acknowledged
    second = MqttIngest(source, tmp_path / "second")
    second.start()
    try:
        wait_for(lambda: second.stats.acked == 100, 20, "the redelivered backlog")
    finally:
        second.stop()
    rows = _read_all(tmp_path / "second", 1)
    seqs = sorted((str(t), json.loads(p)["seq"]) for t, p, _ in rows)  # type: ignore[arg-type]
    assert seqs == sorted((f"sensors/s{i % 5}", i // 5) for i in range(100))


def test_a_full_queue_drops_qos0_and_counts_it_but_keeps_qos1(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    host, port = mosquitto
    paused = threading.Event()
    paused.set()
    source = MqttSource(host, port, client_id="agent-4", queue_max_messages=50)
    ingest = MqttIngest(source, tmp_path, should_pause=paused.is_set)
    ingest.start()
    try:
        wait_for(lambda: ingest.stats.connected, 10, "the subscription")
        pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="qos0-publisher")
        pub.connect(host, port)
        pub.loop_start()
        try:
            for info in [pub.publish("sensors/flood", b"x" * 100, qos=0) for _ in range(500)]:
                info.wait_for_publish(10)
        finally:
            pub.disconnect()
            pub.loop_stop()
        wait_for(lambda: ingest.stats.received == 500, 10, "every QoS 0 message delivered")
        assert (ingest.stats.queued, ingest.stats.dropped_qos0) == (50, 450)
        _publish(host, port, _readings(30))  # QoS 1 beyond the bound: kept, never dropped
        wait_for(lambda: ingest.stats.received >= 520, 10, "the broker's in-flight window")
        assert ingest.stats.dropped_qos0 == 450
        paused.clear()
        wait_for(lambda: ingest.stats.appended == 80, 20, "the kept messages written")
    finally:
        ingest.stop()
    rows = _read_all(tmp_path, 1)
    assert sum(1 for t, _, _ in rows if t == "sensors/flood") == 50
    assert sorted(json.loads(p)["v"] for t, p, _ in rows if t != "sensors/flood") == list(  # type: ignore[arg-type]
        range(30)
    )


def test_an_unreachable_broker_is_reported_with_its_address(tmp_path: Path) -> None:
    from headwater.common._health import Health

    port = free_port()  # nothing listens there
    health = Health("agent")
    ingest = MqttIngest(MqttSource("127.0.0.1", port, client_id="agent-5"), tmp_path, health=health)
    ingest.start()
    try:
        wait_for(lambda: health.state == "degraded", 5, "the broker reported unreachable")
        assert health.reasons() == [f"mqtt: broker 127.0.0.1:{port} unreachable (retrying)"]
    finally:
        ingest.stop()
