"""The IoT bench pipeline with a model scoring each reading (``python -m bench scoring``).

``BENCH_SCORING`` picks the variant; all have ``bench/iot``'s two stages (readings ->
parse -> valid -> sensor fused in one process; the keyed window -> stats -> flag -> sink
in another):

- ``base``: as it is (its source waits for the bench's go: ``GatedSpout``);
- ``json``: a map step after ``valid`` judges each reading with the JSON anomaly model
  (``AnomalyModel.flag``, the artifact at ``BENCH_JSON_MODEL``), as the IoT example's
  anomaly step does: the sensor's previous ``[value, smoothed]`` kept per sensor;
- ``hop``: a ``score`` step after ``valid`` whose package ships no model: the records
  pass unscored. The step's own component and its stream-manager hop, no model run;
- ``onnx``, ``trees``: that ``score`` step with the ONNX model its package ships
  (``headwater_models.json`` and ``models/<sha256>.onnx`` beside this topology's file,
  written by ``bench/scoring.py``), on the reading's ``value`` and ``seq``.

Every scored reading leaves with ``score`` and ``model_version``; the window statistics
count the readings that carry a score (a fifth figure), and each result has that count
last, so the bench checks that every valid reading was scored, once.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from bench.iot.functions import WINDOW_MS, event_ms, flag, latency_key, parse, sensor, valid
from bench.peer_kit import CONFIG, OUT, BatchSpout, Collect
from headwater import Topology
from headwater.dsl import Pipeline, Tumbling

VARIANTS = ("base", "json", "hop", "onnx", "trees")
MODEL = "iot-reading"  # the ONNX model's name in the package
INPUTS = ("value", "seq")
ALPHA = 0.2  # the smoothing of the previous reading kept for the JSON model


class GatedSpout(BatchSpout):
    """``BatchSpout`` that offers nothing until ``BENCH_OUT.go`` exists: the bench writes it
    once every task has opened (the score step loads its model at open), so the rate counts
    no model load."""

    def next_tuple(self) -> None:
        if not getattr(self, "go", False):
            self.go = os.path.exists(OUT + ".go")
            if not self.go:
                time.sleep(0.01)
                return
        super().next_tuple()


class JsonAnomaly:
    """The JSON anomaly model on each reading: ``flag(sensor, prev, value)``, ``prev`` the
    sensor's previous ``[value, smoothed]``; the reading leaves as a new dict with
    ``score`` (the flag) and ``model_version``, as the ``score`` step writes its output."""

    def __init__(self, path: str) -> None:
        from headwater.common.models import load_model

        self.model = load_model(Path(path).read_bytes())
        self.prev: dict[str, list[float]] = {}

    def __call__(self, r: dict[str, Any]) -> dict[str, Any]:
        s, value = r["sensor"], r["value"]
        prev = self.prev.get(s)
        flagged = self.model.flag(s, prev, value)
        smoothed = value if prev is None else prev[1] + ALPHA * (value - prev[1])
        self.prev[s] = [value, smoothed]
        return {**r, "score": flagged, "model_version": "1"}


def zero() -> list[float]:
    return [0, 0.0, math.inf, -math.inf, 0]  # count, sum, min, max, scored


def add(acc: list[float], r: dict[str, Any]) -> list[float]:
    v = r["value"]
    acc[0] += 1
    acc[1] += v
    acc[2] = min(acc[2], v)
    acc[3] = max(acc[3], v)
    if r.get("score") is not None:
        acc[4] += 1
    return acc


def merge(a: list[float], b: list[float]) -> list[float]:
    return [a[0] + b[0], a[1] + b[1], min(a[2], b[2]), max(a[3], b[3]), a[4] + b[4]]


def result(w: dict[str, Any]) -> tuple[Any, ...]:
    acc = w["value"]
    return (*flag(w["key"], w["start"], acc[:4]), int(acc[4]))


def summary(results: list[tuple[Any, ...]]) -> dict[str, Any]:
    """What bench/iot's runners agree on, and how many readings carried a score."""
    return {
        "records": len(results),
        "readings": sum(r[2] for r in results),
        "anomalies": sum(1 for r in results if r[4]),
        "scored": sum(r[5] for r in results),
    }


def build(variant: str | None = None) -> Topology:
    """The variant's topology (default: ``BENCH_SCORING``'s, read now: each package's
    ``topo.py`` calls this, since a module imported once per process could not give the
    launcher a second variant)."""
    variant = variant or os.environ.get("BENCH_SCORING", "base")
    pipeline = Pipeline(f"iotscore{variant}", CONFIG)
    readings = pipeline.source("readings", GatedSpout).map("parse", parse).filter("valid", valid)
    if variant == "json":
        readings = readings.map("anomaly", JsonAnomaly(os.environ.get("BENCH_JSON_MODEL", "")))
    elif variant in ("hop", "onnx", "trees"):
        readings = readings.score("score", MODEL, inputs=INPUTS, output="score")
    (
        readings.key_by("sensor", sensor)
        .window("window", Tumbling(WINDOW_MS), timestamp=event_ms)
        .aggregate("stats", zero, add, merge)
        .map("flag", result)
        .sink("out", Collect(summary, latency_key))
    )
    return pipeline.build()
