"""The IoT pipeline in the functional DSL: the same steps and output as ``iot_pipeline.py``.

    readings -> parse -> by_sensor -> last_seq (dedup) -> ewma (smooth)
      -> welford (anomaly; the model rolled out to the agent, if any)
      -> windows (10 s per sensor) -> by_site_window -> site_windows
      -> sink (KeyValueSink, [key, row] per site/window)
    welford's readings, windows' closed windows, every step's dead letters
      -> the landing zone, $IOT_OUT/landing/{readings,sensor_windows,dead_letters}
         (Parquet by date and site, in the cloud: ``iot_landing``)

The keyed steps after ``by_sensor`` run fused on the edge (one instance),
the windows onwards in the cloud. A step refuses a reading by raising
``DeadLetter`` (``parse`` for malformed input, ``last_seq`` for a seq
implausibly far ahead); a step that raises anything else is retried first.
Configure with IOT_LOG and IOT_OUT (default ./iot-out); see ``iot_paths``.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from headwater import Context, Reliability
from headwater._demo import iot_landing as landing
from headwater._demo import iot_steps as steps
from headwater._demo.iot_paths import Readings, ingest_log, out_dir
from headwater.common.connectors import KeyValueSink
from headwater.common.dsl._ops import KeyedFlatMapOp
from headwater.dsl import Pipeline
from headwater.placement import cloud, edge

# IOT_LOG, else on an agent the agent's ingest log; IOT_OUT, else ./iot-out (see iot_paths)
LOG = ingest_log()
OUT = out_dir()
PARTITIONS = int(os.environ.get("IOT_PARTITIONS", "1"))


class AnomalyOp(KeyedFlatMapOp):
    """``steps.anomaly`` with the model the package ships for this agent (the fused edge
    component's entry of ``headwater_models.json``); opening fails if it does not load."""

    def __init__(self) -> None:
        super().__init__("welford", steps.anomaly)

    def open(self, ctx: Context) -> None:
        from headwater._demo.iot_model import live_model

        super().open(ctx)
        model, version = live_model(ctx.config)
        self.fn = partial(steps.anomaly, model=model, version=version)


def _parse(record: list[Any]) -> list[Any]:
    topic, payload, received_ms = record
    return steps.parse(topic, payload, received_ms)


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
    .key_by("by_sensor", lambda row: row[1])
    .flat_map_by_key("last_seq", steps.dedup)
    .flat_map_by_key("ewma", steps.smooth)
    .apply("welford", AnomalyOp, keyed=True)
)
windows = scored.flat_map_by_key("windows", steps.sensor_window, placement=cloud())
(
    windows.key_by("by_site_window", steps.site_key)
    .flat_map_by_key("site_windows", steps.site_window)
    .to("sink", partial(KeyValueSink, f"{OUT}/site_windows", key="key"), key=True)
)
# the landing zone, in the cloud (a sink takes its step's placement: hence the cloud map)
scored.map("readings_out", _same, placement=cloud()).to(
    "land_readings", landing.readings(OUT, fields=landing.READING)
)
windows.to("land_windows", landing.sensor_windows(OUT, fields=landing.WINDOW))
p.dead_letters("dead_letters", landing.dead_letters(OUT))
topology = p.build()
