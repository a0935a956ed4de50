"""Word count on PySpark Structured Streaming: ``python -m bench.wc.pyspark_flow``.

Written as a Spark user would, in Spark SQL functions: each line a sentence,
``split`` on spaces and ``explode`` into words (empty words dropped, as
``str.split`` drops them), then ``groupBy(word).count()`` in update mode.

Update mode emits, per micro-batch, one (word, running count) row for each
word the micro-batch changed, not one per word occurrence as the other runners
do; so this runner's ``records`` is not theirs, and ``bench/peers.py`` compares
only ``distinct`` and ``total`` for it. The sink is done once the total (the
latest count of every word, summed) reaches the number of words
(``BENCH_EXPECT``, the floor's records, one per word). At a fixed rate a
row's latency key is (word, count): it counts from the sentence holding that
occurrence of the word, the last the micro-batch counted.

Spark gets a warm-up query over the first ``BENCH_SPARK_WARMUP`` sentences
(default 50,000) before the measured one, so the JIT and planner are warm, as a
long-running Spark job would be.

Driver, data files, warm-up and timing: ``bench/peer_pyspark.py``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.peer_pyspark import Collect, run
from bench.wc.functions import latency_key, summary


def counts(spark: SparkSession, lines: DataFrame) -> DataFrame:
    """(word, running count) for each word a micro-batch changed."""
    words = lines.select(F.explode(F.split("value", " ")).alias("word"))
    return words.where(F.col("word") != "").groupBy("word").count()


def _line(sentence: str) -> bytes:
    return sentence.encode()


def main() -> None:
    run("wcbench", counts, "update", _line, Collect(summary, "total", latency_key))


if __name__ == "__main__":
    main()
