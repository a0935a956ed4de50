"""The IoT example's landing from real agents, rolled up by Spark killed twice: exact aggregates;
then a model trained on that history with MLlib, its figures checked on the held-out split.

Sensors publish through Mosquitto to two agents; the edge half runs there, the
cloud half on a worker lands every reading in ``$IOT_OUT/landing``. While more
lands, ``headwater spark rollup`` (a real process: its driver and JVM) is
SIGKILLed once after its first batch committed and once in the middle of a
batch; a last ``--once`` pass ends it, and every hourly and daily aggregate,
per site and per sensor, must equal an offline recomputation from the raw
readings (exact counts, sums, min, max; nothing twice). ``headwater spark
train`` then fits the anomaly model on the same landed history; its figures
must be those of its artifact (loaded without Spark) on the held-out split.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from headwater.common.connectors import manifests
from headwater.common.models import load_model

from .._iot import iot_steps as steps
from ..cloud.spark._rollup_check import assert_warehouse, killed_twice
from ..cloud.spark._train_check import assert_evaluation
from ._daemons import Daemons
from ._support import wait_for
from .test_edge_cloud import Sensors, _start_cluster, sensors
from .test_iot import SENSORS

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(420)]
__all__ = ["sensors"]  # the fixture
PER_SENSOR = 400  # readings per sensor, 6 minutes of event time apart: 40 hours, 3 dates
STEP_MS = 6 * 60_000
PARTS = 12


def offline(readings: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the pipeline lands for ``readings``, with its own step functions."""
    state: dict[str, list[Any]] = defaultdict(lambda: [None, None])
    out = []
    for r in readings:
        ewma, stats = state[r["sensor"]]
        row = [r["site"], r["sensor"], r["seq"], r["ts"], float(r["value"])]
        ewma, [row] = steps.smooth(ewma, row)
        stats, [row] = steps.anomaly(stats, row)
        state[r["sensor"]] = [ewma, stats]
        out.append({"site": row[0], "sensor": row[1], "ts": row[3], "value": row[4]})
        out[-1]["anomaly"] = row[6]
    return out


@dataclass
class AgentLanding:
    """Lands by publishing the next part of the readings and waiting until it has landed."""

    sensors: Sensors
    root: Path
    pending: list[list[dict[str, Any]]]
    published: list[dict[str, Any]] = field(default_factory=list)
    landed: list[dict[str, Any]] = field(default_factory=list)

    def land(self, commits: int = 1) -> None:
        for _ in range(commits):
            part = self.pending.pop(0)
            self.sensors.publish(
                [(f"sensors/{r['site']}/{r['sensor']}", json.dumps(r).encode()) for r in part]
            )
            self.published.extend(part)
        wait_for(
            lambda: sum(m["rows"] for m in manifests(self.root, "readings")) >= len(self.published),
            90,
            f"{len(self.published)} readings landed",
        )
        self.landed = offline(self.published)


def test_rollup_of_what_agents_landed_is_exactly_once_through_driver_kills(
    daemons: Daemons, mosquitto: tuple[str, int], sensors: Sensors, tmp_path: Path
) -> None:
    _worker, _agents, out = _start_cluster(daemons, mosquitto, tmp_path)
    readings = [r for _, r in SENSORS["readings"](2, 3, PER_SENSOR, step_ms=STEP_MS)]
    per = len(readings) // PARTS
    landing = AgentLanding(
        sensors, out / "landing", [readings[i : i + per] for i in range(0, len(readings), per)]
    )

    killed_twice(landing, tmp_path)

    assert len(landing.landed) == len(readings) == 2 * 3 * PER_SENSOR
    assert sum(m["rows"] for m in manifests(landing.root, "readings")) == len(readings)
    assert len({r["ts"] // 86_400_000 for r in landing.landed}) == 3
    assert_warehouse(tmp_path / "warehouse", landing.landed)

    artifact = tmp_path / "iot-anomaly.json"
    train = subprocess.run(
        [
            *(sys.executable, "-m", "headwater", "spark", "train"),
            *("--landing", str(landing.root), "--out", str(artifact), "--spark-master", "local[2]"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert train.returncode == 0, train.stdout + train.stderr
    doc = load_model(artifact.read_bytes()).doc
    assert_evaluation(doc, landing.root, 0.25, len(readings))
    model, handset = doc["evaluation"]["model"], doc["evaluation"]["handset"]
    assert model["tp"] + model["fn"] >= 12  # the held-out quarter has anomalies to find
    assert model["f1"] > handset["f1"]
