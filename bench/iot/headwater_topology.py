"""The IoT pipeline as a Headwater DSL pipeline (``bench/peers.py`` runs it on a LocalCluster).

Two shapes of the same steps:

- two stages (runners ``headwater``, ``headwater-eo``): readings -> parse ->
  valid -> sensor fused in one process, the keyed window -> flag -> sink in
  another, one stream-manager hop between;
- data-parallel chains (``BENCH_PARTITIONS`` set, runners ``headwater-par*``):
  the readings are split by sensor before the run (``functions.split_data``,
  with ``headwater.dsl.partition_of``), one file per task, as key-partitioned
  Kafka partitions would hold them; each task of one component reads its own
  file and runs the whole pipeline fused (``key_by(..., partitioned=True)``),
  with no stream-manager hop and no encoding per reading.
"""

from __future__ import annotations

import os
from functools import partial

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
from bench.peer_kit import CONFIG, BatchSpout, Collect, CollectPart, PartitionSpout
from headwater.dsl import Pipeline, Tumbling

PARTITIONS = int(os.environ.get("BENCH_PARTITIONS", "0"))  # 0: the two-stage shape

if PARTITIONS:
    pipeline = Pipeline("iotbenchpar", CONFIG)
    source = pipeline.source("readings", PartitionSpout, parallelism=PARTITIONS)
else:
    pipeline = Pipeline("iotbench", CONFIG)
    source = pipeline.source("readings", BatchSpout)
windows = (
    source.map("parse", parse)
    .filter("valid", valid)
    .key_by("sensor", sensor, partitioned=bool(PARTITIONS))
    .window("window", Tumbling(WINDOW_MS), timestamp=event_ms)
    .aggregate("stats", zero, add, merge)
    .map("flag", lambda w: flag(w["key"], w["start"], w["value"]))
)
if PARTITIONS:
    windows.apply("out", partial(CollectPart, "out", summary, latency_key))
else:
    windows.sink("out", Collect(summary, latency_key))
topology = pipeline.build()
