"""Word count as a Headwater DSL pipeline (``bench/peers.py`` runs it on a LocalCluster).

Two shapes of the same steps:

- one task per stage (runners ``headwater``, ``headwater-eo``): sentences ->
  split -> key by word fused in one process, the running count -> sink in
  another, one stream-manager hop between;
- two tasks per stage (``BENCH_PARTITIONS`` set, runners ``headwater-par*``):
  the sentences are dealt out before the run into one file per task
  (``functions.split_data``); each task of the source's component reads its
  own and splits, and each word goes to its word's counting task (one of two,
  ``fields`` grouping), whose sink keeps that task's results.
"""

from __future__ import annotations

import os

from bench.peer_kit import CONFIG, BatchSpout, Collect, CollectOwnWords, PartitionSpout
from bench.wc.functions import add_counts, latency_key, one, split, summary
from headwater.dsl import Pipeline

PARTITIONS = int(os.environ.get("BENCH_PARTITIONS", "0"))  # 0: one task per stage

if PARTITIONS:
    pipeline = Pipeline("wcbenchpar", CONFIG)
    source = pipeline.source("sentences", PartitionSpout, parallelism=PARTITIONS)
else:
    pipeline = Pipeline("wcbench", CONFIG)
    source = pipeline.source("sentences", BatchSpout)
counts = (
    source.flat_map("split", split)
    .key_by("word", lambda w: w)
    .map("one", one)
    .reduce_by_key("count", add_counts)
)
if PARTITIONS:
    counts.sink("out", CollectOwnWords(summary, latency_key, PARTITIONS))
else:
    counts.sink("out", Collect(summary, latency_key))
topology = pipeline.build()
