"""The IoT pipeline on PySpark Structured Streaming: ``python -m bench.iot.pyspark_flow``.

Written as a Spark user would, in Spark SQL functions rather than Python UDFs:
the JSON lines are parsed by ``from_json`` with a schema, the rows ``valid``
would refuse are dropped (no sensor, no or negative ts, no or non-finite
value; a malformed line parses to nulls), the event time is ``ts`` in ms, and
a 10 s tumbling ``window`` per sensor counts, sums and takes the min and max,
with a watermark of 0 s (the data is in event-time order), in append mode.
Then ``flag``'s figures: the mean to 6 places (``bround``, half-even like
Python's ``round``) and whether the peak is more than 20 above the mean.

The end of input: the floor closes every window when the input ends, but in
append mode Spark emits a window only once the watermark has passed it, so the
last windows would stay open. One sentinel reading follows the data, in a file
of its own, far in the future (2100): it moves the watermark past every data
window, so Spark's next (no-data) micro-batch emits them all; the sentinel's
own window never closes, and the sink drops it in any case. The sink is done
once it holds as many windows as the floor emitted (``BENCH_EXPECT``). At a
fixed rate a window's latency key is its start (``latency_key``): it counts
from the reading that closed it, which Spark emits in the micro-batch after
the one that read that reading.

Spark gets a warm-up query over the first ``BENCH_SPARK_WARMUP`` readings
(default 50,000), with the sentinel after them, before the measured one, so the
JIT and planner are warm, as a long-running Spark job would be.

Driver, data files, warm-up and timing: ``bench/peer_pyspark.py``.
"""

from __future__ import annotations

import json
from typing import Any

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.iot.functions import WINDOW_MS, latency_key, summary
from bench.peer_pyspark import Collect, run

SCHEMA = "site STRING, sensor STRING, seq LONG, ts LONG, value DOUBLE"
END_SENSOR = "__end__"
END = {"site": "end", "sensor": END_SENSOR, "seq": -1, "ts": 4_102_444_800_000, "value": 0.0}


def _valid() -> Column:
    value = F.col("value")
    return (
        F.col("sensor").isNotNull()
        & F.col("ts").isNotNull()
        & (F.col("ts") >= 0)
        & value.isNotNull()
        & ~F.isnan(value)
        & (F.abs(value) != float("inf"))
    )


def windows(spark: SparkSession, lines: DataFrame) -> DataFrame:
    """(sensor, window start ms, count, mean, anomaly) per closed window."""
    readings = lines.select(F.from_json("value", SCHEMA).alias("r")).select("r.*")
    stats = (
        readings.where(_valid())
        .withColumn("et", F.timestamp_millis("ts"))
        .withWatermark("et", "0 seconds")
        .groupBy(F.window("et", f"{WINDOW_MS} milliseconds"), "sensor")
        .agg(
            F.count("*").alias("n"),
            F.sum("value").alias("total"),
            F.min("value").alias("lo"),
            F.max("value").alias("hi"),
        )
    )
    mean = F.col("total") / F.col("n")
    return stats.select(
        "sensor",
        F.unix_millis("window.start").alias("start"),
        "n",
        F.bround(mean, 6).alias("mean"),
        (F.col("hi") - mean > 20.0).alias("anomaly"),
    )


def _line(payload: bytes) -> bytes:
    return payload  # already a line of JSON (or a malformed one)


def _keep(row: Any) -> bool:
    return bool(row["sensor"] != END_SENSOR)


def main() -> None:
    sink = Collect(summary, "records", latency_key, _keep)
    run("iotbench", windows, "append", _line, sink, tail=[json.dumps(END).encode()])


if __name__ == "__main__":
    main()
