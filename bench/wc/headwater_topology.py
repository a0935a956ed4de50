"""Word count as a Headwater DSL pipeline (``bench/peers.py`` runs it on a LocalCluster).

Fused as the DSL does it: sentences -> split -> key by word in one process,
the running count -> sink in another, one stream-manager hop between.
"""

from __future__ import annotations

from bench.peer_kit import CONFIG, BatchSpout, Collect
from bench.wc.functions import add_counts, latency_key, one, split, summary
from headwater.dsl import Pipeline

pipeline = Pipeline("wcbench", CONFIG)
(
    pipeline.source("sentences", BatchSpout)
    .flat_map("split", split)
    .key_by("word", lambda w: w)
    .map("one", one)
    .reduce_by_key("count", add_counts)
    .sink("out", Collect(summary, latency_key))
)
topology = pipeline.build()
