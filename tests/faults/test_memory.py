"""Bounded memory on the edge: a QoS 0 flood while ingestion is paused.

Before the fix QoS 0 messages piled up in an unbounded queue while the agent's outbox was
over its budget (agent RSS 69 -> 331 MB); now the queue has a byte and a count bound, and
what QoS 0 loses beyond it is counted (``mqtt_dropped_qos0``). QoS 1 readings are never
dropped: the broker keeps them.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt
import psutil
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from headwater._demo.linkproxy import LinkProxy

from .._wait import wait_for
from ..integration._daemons import Daemons
from . import _report
from ._edge import Site, publish, readings

pytestmark = pytest.mark.cluster
FLOOD = 8000  # QoS 0 messages of 16 KiB: 128 MiB, four times the queue's byte bound
GROWTH_MAX = 96 << 20  # the queue's 32 MiB bound and what Python and paho add around it


def _flood(address: tuple[str, int]) -> None:
    client = mqtt.Client(CallbackAPIVersion.VERSION2, client_id="flood")
    client.connect(*address)
    client.loop_start()
    try:
        pad = "x" * (16 << 10)
        infos = []
        for i in range(FLOOD):
            reading = {
                "site": "flood",
                "sensor": "f",
                "seq": i,
                "ts": 1_790_000_000_000 + i,
                "value": 1.0,
                "pad": pad,
            }
            infos.append(client.publish("sensors/site0/flood", json.dumps(reading), qos=0))
        for info in infos:
            info.wait_for_publish(60)
    finally:
        client.disconnect()
        client.loop_stop()


def test_qos0_flood_while_paused_keeps_memory_bounded_and_counts_the_drops(
    daemons: Daemons, mosquitto: tuple[str, int], tmp_path: Path
) -> None:
    site = Site(daemons, mosquitto, tmp_path)
    site.start_cloud()
    proxy = LinkProxy(daemons.grpc)
    try:
        site.start("--outbox-budget", "3000", master=proxy.address)
        everything = readings(60)
        a, b = everything[:90], everything[90:]
        publish(mosquitto, a)
        wait_for(lambda: site.metric("mqtt_appended") == len(a), 30, "the first readings in")
        proxy.cut()  # the outbox fills, ingestion pauses
        publish(mosquitto, b)
        wait_for(lambda: site.metric("mqtt_paused") == 1.0, 60, "ingestion paused")
        agent = psutil.Process(site.agent.pid)
        before = agent.memory_info().rss
        peak = [before]
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                peak[0] = max(peak[0], agent.memory_info().rss)
                done.wait(0.05)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        flooded = time.monotonic()
        try:
            _flood(mosquitto)
            wait_for(
                lambda: site.metric("mqtt_received") >= len(a) + FLOOD,
                60,
                "the whole flood delivered to the agent",
            )
            detect_s = time.monotonic() - flooded
        finally:
            done.set()
            sampler.join(5)
        growth = peak[0] - before
        assert growth < GROWTH_MAX, f"agent RSS grew {growth >> 20} MiB"
        dropped = site.metric("mqtt_dropped_qos0")
        assert 0 < dropped < FLOOD
        assert site.metric("mqtt_queued_bytes") <= 32 << 20
        proxy.restore()
        restored = time.monotonic()
        site.wait_all(everything)  # every QoS 1 reading, once
        _report.record(
            "QoS 0 flood while ingestion is paused",
            detect_s=round(detect_s, 1),
            recover_s=round(time.monotonic() - restored, 1),
            **site.lost_and_duplicated(everything),
        )
        print(f"RSS growth {growth >> 20} MiB, QoS 0 dropped {dropped:.0f} of {FLOOD}")
    finally:
        proxy.close()
