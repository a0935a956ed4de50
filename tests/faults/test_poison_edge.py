"""Finding 3 on the edge, as reported: one deeply nested payload stopped a site for good.

A master, a worker and two agents with a real Mosquitto run the IoT example. Site 0 gets
a deeply nested payload (the example's parse raises RecursionError on it) and a reading
whose seq jumps to 99,999,999. Both are dead-lettered once in the cloud sink with their
component and reason, listed under the master's ``/exceptions`` with the agent, and every
reading of both sites published before and after still makes its window.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from ..integration._daemons import Daemons
from ..integration._support import landed_dead_letters, wait_for
from ..integration.test_edge_cloud import Sensors, _start_cluster
from ..integration.test_iot import SENSORS, _expected, _site_rows
from . import _report

pytestmark = pytest.mark.cluster
DEEP = b"[" * 100_000 + b"]" * 100_000


def test_a_poison_record_on_an_agent_is_dead_lettered_and_the_site_goes_on(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    _worker, _agents, out = _start_cluster(daemons, mosquitto, tmp_path)
    readings = list(SENSORS["readings"](2, 3, 40))
    messages = [(t, json.dumps(r).encode()) for t, r in readings]
    first = [m for m, (_, r) in zip(messages, readings, strict=True) if r["seq"] < 20]
    later = [m for m, (_, r) in zip(messages, readings, strict=True) if r["seq"] >= 20]
    jump = {
        "site": "site0",
        "sensor": "s0-1",
        "seq": 99_999_999,
        "ts": readings[0][1]["ts"],
        "value": 1.0,
    }
    first += [("sensors/site0/deep", DEEP), ("sensors/site0/s0-1", json.dumps(jump).encode())]
    expected = _expected([r for _, r in readings])

    def dead() -> list[list[Any]]:
        return landed_dead_letters(out)

    t0 = time.monotonic()
    sensors.publish(first)
    wait_for(lambda: len(dead()) >= 2, 90, "both poison records dead-lettered in the cloud")
    detect_s = time.monotonic() - t0
    t1 = time.monotonic()
    sensors.publish(later)
    wait_for(
        lambda: _site_rows(out / "site_windows") == expected,
        90,
        "every closed window of both sites, site0's later readings in them",
    )
    recover_s = time.monotonic() - t1

    letters = sorted(dead(), key=lambda d: str(d[0]))
    assert [(d[0], str(d[1]).split(" while")[0]) for d in letters] == [
        ("dedup", "seq 99999999 is 99999980 ahead of the sensor's last (19); at most 100000"),
        ("parse", "RecursionError: maximum recursion depth exceeded"),
    ]
    assert letters[1][3][0] == "sensors/site0/deep" and "RecursionError" in str(letters[1][2])

    def listed() -> set[str]:  # reported with the cloud containers' heartbeats
        exceptions = daemons.api("/api/v1/topologies/iot/exceptions")
        return {e["component"] for e in exceptions if e["message"].startswith("dead letter")}

    wait_for(
        lambda: listed() == {"parse (agent gw-site0)", "dedup (agent gw-site0)"},
        30,
        "both dead letters listed under the cloud's /exceptions",
    )
    _report.record(
        "poison record on an agent (edge to cloud)",
        detect_s=round(detect_s, 2),
        recover_s=round(recover_s, 2),
        readings=len(readings),
        lost=len(set(expected) - set(_site_rows(out / "site_windows"))),
        duplicated=0,
    )
