"""The IoT pipeline as a Headwater DSL pipeline (``bench/peers.py`` runs it on a LocalCluster).

Fused as the DSL does it: readings -> parse -> valid -> sensor in one process,
the keyed window -> flag -> sink in another, one stream-manager hop between.
"""

from __future__ import annotations

from bench.iot.functions import (
    WINDOW_MS,
    add,
    event_ms,
    flag,
    latency_key,
    merge,
    parse,
    sensor,
    summary,
    valid,
    zero,
)
from bench.peer_kit import CONFIG, BatchSpout, Collect
from headwater.dsl import Pipeline, Tumbling

pipeline = Pipeline("iotbench", CONFIG)
(
    pipeline.source("readings", BatchSpout)
    .map("parse", parse)
    .filter("valid", valid)
    .key_by("sensor", sensor)
    .window("window", Tumbling(WINDOW_MS), timestamp=event_ms)
    .aggregate("stats", zero, add, merge)
    .map("flag", lambda w: flag(w["key"], w["start"], w["value"]))
    .sink("out", Collect(summary, latency_key))
)
topology = pipeline.build()
