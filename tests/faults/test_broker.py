"""The MQTT broker away: down when the agent starts, and stopped mid-stream then restarted.

Before the fix an agent with no broker in reach logged nothing for 25 s and more (only
``mqtt_connected: 0`` in the API). Now it logs within 5 s, naming the broker's address, and
its health is degraded until it is subscribed; the broker's persistent session keeps every
QoS 1 reading through a restart.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from .._wait import wait_for
from ..integration._daemons import Daemons
from . import _report
from ._broker import Broker
from ._edge import AGENT, Publisher, Site, publish, readings

pytestmark = pytest.mark.cluster


def test_broker_down_at_start_is_logged_and_degraded_then_everything_flows(
    daemons: Daemons, broker: Broker, tmp_path: Path
) -> None:
    site = Site(daemons, broker.address, tmp_path)
    site.start_cloud()
    started = time.monotonic()
    site.start_agent()
    log = tmp_path / f"{AGENT}.log"
    address = f"127.0.0.1:{broker.port}"
    line = wait_for(
        lambda: next(
            (ln for ln in log.read_text().splitlines() if "WARN" in ln and address in ln), None
        ),
        5,
        f"a warning naming the broker {address}",
    )
    detect_s = time.monotonic() - started
    assert re.search(rf"broker {re.escape(address)} unreachable", line), line
    wait_for(
        lambda: site.reason(f"mqtt: broker {address} unreachable"),
        30,
        "the agent degraded, at the agent and the master",
    )
    assert site.status()["health"] == "degraded"
    assert site.node()["health"] == "degraded"
    site.submit()
    broker.start()
    up = time.monotonic()
    site.wait_flowing()
    wait_for(lambda: site.status()["health"] == "ok", 10, "the agent ok once subscribed")
    everything = readings(40)
    publish(broker.address, everything)
    site.wait_all(everything)
    _report.record(
        "MQTT broker down when the agent starts",
        detect_s=round(detect_s, 1),
        recover_s=round(time.monotonic() - up, 1),
        **site.lost_and_duplicated(everything),
    )


def test_broker_restart_mid_stream_loses_and_duplicates_nothing(
    daemons: Daemons, broker: Broker, tmp_path: Path
) -> None:
    broker.start()
    site = Site(daemons, broker.address, tmp_path)
    site.start()
    everything = readings(60)
    publisher = Publisher(broker.address, everything, rate=30)
    publisher.start()
    try:
        wait_for(lambda: site.metric("mqtt_appended") >= 45, 30, "readings flowing")
        broker.stop()  # mid-stream: it saves the agent's session and what it holds
        stopped = time.monotonic()
        reason = wait_for(
            lambda: site.reason(f"broker 127.0.0.1:{broker.port}"),
            30,
            "the agent degraded: the broker is away",
        )
        detect_s = time.monotonic() - stopped
        assert site.status()["health"] == "degraded", reason
        broker.start()
        restarted = time.monotonic()
        wait_for(lambda: not publisher.is_alive(), 60, "every reading published")
        assert publisher.sent == len(everything) and publisher.retries > 0
        site.wait_all(everything)
        wait_for(lambda: site.status()["health"] == "ok", 10, "the agent ok again")
    finally:
        publisher.stop.set()
        publisher.join(10)
    _report.record(
        "MQTT broker restarted mid-stream (persistent session)",
        detect_s=round(detect_s, 1),
        recover_s=round(time.monotonic() - restarted, 1),
        **site.lost_and_duplicated(everything),
    )
