"""The IoT pipeline in the functional DSL: the same steps and output as ``iot_pipeline.py``.

    readings -> parse -> by_sensor -> last_seq (dedup) -> ewma (smooth)
      -> welford (anomaly) -> windows (10 s per sensor) -> by_site_window -> site_windows
      -> sink (KeyValueSink, [key, row] per site/window)
    every step's dead letters -> dead_letters (files, in the cloud)

The keyed steps after ``by_sensor`` run fused on the edge (one instance),
the windows onwards in the cloud. A step refuses a reading by raising
``DeadLetter`` (``parse`` for malformed input, ``last_seq`` for a seq
implausibly far ahead); a step that raises anything else is retried first.
Configure with IOT_LOG and IOT_OUT.
"""

from __future__ import annotations

import os
from functools import partial
from typing import Any

from headwater import Reliability
from headwater._demo import iot_steps as steps
from headwater.common.connectors import KeyValueSink, LogSpout, TransactionalFileSink
from headwater.dsl import Pipeline
from headwater.placement import cloud, edge

LOG = os.environ.get("IOT_LOG") or os.environ.get(
    "HEADWATER_INGEST_LOG", "/var/lib/headwater/agent/ingest"
)
OUT = os.environ.get("IOT_OUT", "/var/lib/headwater/iot")
PARTITIONS = int(os.environ.get("IOT_PARTITIONS", "1"))


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


def _parse(record: list[Any]) -> list[Any]:
    topic, payload, received_ms = record
    return steps.parse(topic, payload, received_ms)


p = Pipeline(
    "iot_dsl",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
(
    p.source("readings", partial(Readings, LOG, partitions=PARTITIONS), placement=edge())
    .map("parse", _parse)
    .key_by("by_sensor", lambda row: row[1])
    .flat_map_by_key("last_seq", steps.dedup)
    .flat_map_by_key("ewma", steps.smooth)
    .flat_map_by_key("welford", steps.anomaly)
    .flat_map_by_key("windows", steps.sensor_window, placement=cloud())
    .key_by("by_site_window", steps.site_key)
    .flat_map_by_key("site_windows", steps.site_window)
    .to("sink", partial(KeyValueSink, f"{OUT}/site_windows", key="key"), key=True)
)
p.dead_letters("dead_letters", partial(TransactionalFileSink, f"{OUT}/dead_letters"))
topology = p.build()
