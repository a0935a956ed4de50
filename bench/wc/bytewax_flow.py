"""Word count on Bytewax: ``python -m bytewax.run bench.wc.bytewax_flow:flow``.

Run as one process, or as several (``-i I -a HOST:PORT;HOST:PORT;...``): each worker's
sink writes its share of the results to ``BENCH_OUT.wN``.
"""

from __future__ import annotations

import bytewax.operators as op
from bytewax.dataflow import Dataflow

from bench.peer_bytewax import BatchSource, Collect
from bench.wc.functions import count, latency_key, split, summary


def _count(total: int | None, word: str) -> tuple[int, int]:
    c = count(total, word)
    return c, c


flow = Dataflow("wcbench")
words = op.flat_map("split", op.input("sentences", flow, BatchSource()), split)
counts = op.stateful_map("count", op.key_on("word", words, lambda w: w), _count)
op.output("out", counts, Collect(summary, latency_key))
