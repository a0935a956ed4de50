"""The IoT example: MQTT -> durable log -> parse/dedup/smooth/anomaly/windows -> per-site rows."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from functools import partial
from pathlib import Path
from typing import Any

import paho.mqtt.client as mqtt
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from headwater._demo import sensors
from headwater.common.connectors import read_key_value_sink
from headwater.edge import MqttIngest, MqttSource

from ._support import EXAMPLES, landed_dead_letters, running, wait_for

pytestmark = pytest.mark.cluster
SENSORS = vars(sensors)  # the simulated readings, recomputed offline
PIPELINE = EXAMPLES / "iot" / "pipeline.py"
MALFORMED = [
    (b"not json at all", "Expecting value"),
    (b'{"site": "site0", "sensor": "x", "seq": 1}', "missing field 'ts'"),
    (
        b'{"site": "site0", "sensor": "x", "seq": "one", "ts": 1, "value": 2}',
        "seq and ts must be non-negative integers",
    ),
    (b"[1, 2]", "a reading must be a JSON object"),
    (
        b'{"site": "site0", "sensor": "x", "seq": 1, "ts": 1, "value": NaN}',
        "value must be a finite number",
    ),
]


def _expected(readings: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Closed windows per site, recomputed offline with the pipeline's own rules."""
    by_sensor: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in readings:
        by_sensor[r["sensor"]].append(r)
    sites: dict[str, list[Any]] = {}
    for rows in by_sensor.values():
        mean, m2 = 0.0, 0.0
        windows: dict[int, list[Any]] = {}
        for seen, r in enumerate(rows):
            v = float(r["value"])
            std = math.sqrt(m2 / (seen - 1)) if seen > 1 else 0.0
            anomaly = seen >= 10 and abs(v - mean) > 3.0 * std
            n = seen + 1
            delta = v - mean
            mean += delta / n
            m2 += delta * (v - mean)
            w = r["ts"] - r["ts"] % 10_000
            acc = windows.setdefault(w, [0, 0.0, v, v, 0])
            windows[w] = [
                acc[0] + 1,
                acc[1] + v,
                min(acc[2], v),
                max(acc[3], v),
                acc[4] + int(anomaly),
            ]
        last = max(windows)  # the newest window of every sensor stays open
        for w, (count, total, lo, hi, anomalies) in windows.items():
            if w == last:
                continue
            key = f"{rows[0]['site']}/{w}"
            s = sites.get(key, [0, 0, 0.0, lo, hi, 0])
            sites[key] = [
                s[0] + 1,
                s[1] + count,
                s[2] + total,
                min(s[3], lo),
                max(s[4], hi),
                s[5] + anomalies,
            ]
    return {
        key: [
            key,
            key.split("/")[0],
            int(key.split("/")[1]),
            s[0],
            s[1],
            round(s[2] / s[1], 6),
            s[3],
            s[4],
            s[5],
        ]
        for key, s in sites.items()
    }


def _site_rows(path: Path) -> dict[str, list[Any]]:
    return read_key_value_sink(path)


def _messages() -> tuple[list[tuple[str, Any]], list[tuple[str, bytes]]]:
    """The readings, and what the sensors publish: with malformed ones and 5 redeliveries."""
    readings = list(SENSORS["readings"](2, 3, 60))
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    messages[100:100] = [("sensors/site0/bad", m) for m, _ in MALFORMED]
    messages += [(t, json.dumps(r).encode()) for t, r in readings[40:45]]  # redelivered
    return readings, messages


def _ingest(mosquitto: tuple[str, int], log: Path, messages: list[tuple[str, bytes]]) -> None:
    """Publish over a real broker; the agent's ingestion writes them to the durable log."""
    host, port = mosquitto
    ingest = MqttIngest(MqttSource(host, port, client_id="gw", partitions=2), log)
    ingest.start()
    pub = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="sensors")
    pub.connect(host, port)
    pub.loop_start()
    try:
        wait_for(lambda: ingest.stats.connected, 10, "the ingest subscription")
        for topic, payload in messages:
            pub.publish(topic, payload, qos=1).wait_for_publish(10)
        # QoS 1 is at least once: a broker may deliver a reading twice (dedup drops it)
        wait_for(
            lambda: ingest.stats.acked >= len(messages),
            60,
            f"every reading ingested ({len(messages)}; stats {ingest.stats})",
        )
    finally:
        pub.disconnect()
        pub.loop_stop()
        ingest.stop()


def test_iot_pipeline_windows_and_dead_letters(mosquitto: tuple[str, int], tmp_path: Path) -> None:
    log, out = tmp_path / "ingest", tmp_path / "out"
    readings, messages = _messages()
    _ingest(mosquitto, log, messages)

    env = {"IOT_LOG": str(log), "IOT_OUT": str(out), "IOT_PARTITIONS": "2"}
    expected = _expected([r for _, r in readings])

    def dead_letters() -> list[list[Any]]:
        return landed_dead_letters(out)

    with running(PIPELINE, env=env) as c:
        wait_for(lambda: len(dead_letters()) == len(MALFORMED), 60, "the dead letters")
        wait_for(
            lambda: _site_rows(out / "site_windows") == expected,
            60,
            "every closed window at the sink",
        )
        wait_for(
            lambda: sum(m.get("user:duplicates", 0) for m in c.metrics()["tasks"].values()) >= 5,
            30,
            "the five redelivered readings dropped",
        )
    reasons = sorted(d[1] for d in dead_letters())  # [component, reason, traceback, record]
    for (payload, reason), got in zip(sorted(MALFORMED, key=lambda m: m[1]), reasons, strict=True):
        assert reason in got, (payload, got)
    assert all(d[0] == "parse" and d[3][0] == "sensors/site0/bad" for d in dead_letters())
    assert _site_rows(out / "site_windows") == expected
    assert len(expected) == 2 * 5  # 2 sites x 5 closed windows


def test_dsl_version_matches_the_component_version(
    mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    """The IoT pipeline written in the DSL gives the component-API version's output."""
    log = tmp_path / "ingest"
    readings, messages = _messages()
    _ingest(mosquitto, log, messages)
    outputs: dict[str, tuple[dict[str, Any], list[Any]]] = {}
    expected = _expected([r for _, r in readings])

    def complete(out: Path) -> bool:
        return len(landed_dead_letters(out)) == len(MALFORMED) and len(
            _site_rows(out / "site_windows")
        ) >= len(expected)

    for name, file in (("components", PIPELINE), ("dsl", EXAMPLES / "iot" / "pipeline_dsl.py")):
        out = tmp_path / f"out-{name}"
        env = {"IOT_LOG": str(log), "IOT_OUT": str(out), "IOT_PARTITIONS": "2"}
        with running(file, env=env) as c:
            if name == "dsl":  # its keyed steps on one key run fused
                assert c.get("/plan")["fused"]["last_seq"] == ["last_seq", "ewma", "welford"]
            wait_for(partial(complete, out), 60, f"{name}: every window and dead letter")
        rows = _site_rows(out / "site_windows")
        dead = landed_dead_letters(out)
        if name == "dsl":  # records are [key, value]: the value is the row
            rows = {k: v[1] for k, v in rows.items()}
        outputs[name] = (rows, sorted(dead))
    assert outputs["dsl"] == outputs["components"]
    assert outputs["dsl"][0] == expected
