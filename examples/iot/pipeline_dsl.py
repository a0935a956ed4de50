"""The IoT pipeline in the functional DSL: the same steps and output as ``pipeline.py``.

    IOT_LOG=/path/to/ingest/log IOT_OUT=/path/to/out headwater run examples/iot/pipeline_dsl.py

    readings -> parse -> by_sensor -> last_seq (dedup) -> ewma (smooth)
      -> welford (anomaly; the model rolled out to the agent, if any)
      -> windows (10 s per sensor, each closed by its sensor's own clock)
      -> sensor_windows -> window_rows -> by_site_window -> site_windows
      -> sink (KeyValueSink, [key, row] per site/window)
    welford's readings, the closed sensor windows, every step's dead letters
      -> the landing zone, $IOT_OUT/landing/{readings,sensor_windows,dead_letters}

Placement: the steps up to ``welford`` run on the edge, the keyed ones after
``by_sensor`` fused into one component (no exchange between them: they share the
key); the windows onwards run in the cloud. Exactly once: EXACTLY_ONCE, state per
step and key in checkpoints, transactional sinks. A step refuses a reading by raising
``DeadLetter`` (``parse`` for malformed input, ``last_seq`` for a seq implausibly far
ahead); a step that raises anything else is retried first.

The windows are the DSL's ``window(Tumbling(10_000), clock="key")``: each sensor's
window closes by that sensor's own clock (its first reading of another window), not by
the task's watermark, so a sensor lagging the others (a gateway back from an outage
sending its backlog) loses nothing: every reading counts in exactly one closed window,
however late it comes. ``aggregate`` folds a window's readings (``steps.window_add``),
``window_rows`` makes each closed window the landed row (``steps.window_row``).

Same files and environment as ``pipeline.py`` (``iot_steps.py``, ``iot_io.py``).
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

import iot_steps as steps
from iot_io import (
    READING,
    WINDOW,
    Readings,
    ingest_log,
    land_dead_letters,
    land_readings,
    land_windows,
    out_dir,
)

from headwater import Context, Reliability
from headwater.connectors import KeyValueSink
from headwater.dsl import KeyedFlatMapOp, Pipeline, Tumbling
from headwater.models import live_model
from headwater.placement import cloud, edge

LOG = ingest_log()
OUT = out_dir()
PARTITIONS = int(os.environ.get("IOT_PARTITIONS", "1"))


class AnomalyOp(KeyedFlatMapOp):
    """``steps.anomaly`` with the model the package ships for this agent (the fused edge
    component's entry of ``headwater_models.json``); opening fails if it does not load."""

    def __init__(self) -> None:
        super().__init__("welford", steps.anomaly)

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        model, version = live_model(ctx.config)
        self.fn = partial(steps.anomaly, model=model, version=version)


def _parse(record: list[Any]) -> list[Any]:
    topic, payload, received_ms = record
    return steps.parse(topic, payload, received_ms)


def _sensor(row: list[Any]) -> Any:
    return row[1]


def _same(row: list[Any]) -> list[Any]:
    return row


p = Pipeline(
    "iot_dsl",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
scored = (
    p.source("readings", partial(Readings, LOG, partitions=PARTITIONS), placement=edge())
    .map("parse", _parse)
    .key_by("by_sensor", _sensor)
    .flat_map_by_key("last_seq", steps.dedup)
    .flat_map_by_key("ewma", steps.smooth)
    .apply("welford", AnomalyOp, keyed=True)
)
windows = (
    scored.window(
        "windows",
        Tumbling(steps.WINDOW_MS),
        timestamp=steps.reading_ts,
        clock="key",
        placement=cloud(),
    )
    .aggregate("sensor_windows", steps.window_zero, steps.window_add)
    .map("window_rows", steps.window_row)
)
(
    windows.key_by("by_site_window", steps.site_key)
    .flat_map_by_key("site_windows", steps.site_window)
    .to("sink", partial(KeyValueSink, f"{OUT}/site_windows", key="key"), key=True)
)
# the landing zone, in the cloud (a sink takes its step's placement: hence the cloud map)
scored.map("readings_out", _same, placement=cloud()).to(
    "land_readings", land_readings(OUT, fields=READING)
)
windows.to("land_windows", land_windows(OUT, fields=WINDOW))
p.dead_letters("dead_letters", land_dead_letters(OUT))
topology = p.build()
