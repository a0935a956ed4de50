"""PySpark Structured Streaming's driver for the peer runners (see ``bench/peer_kit.py``).

Spark reads files itself, so the msgpack batches of ``BENCH_DATA`` become text
files, one item a line, in a directory the query reads as a stream
(``spark.readStream.text``).

At maximum rate (``BENCH_RATE`` 0) the files are written before the query
starts, and that conversion is not timed (the other runners decode the msgpack
batches within their timed run). A file holds ``FILE_BATCHES`` data batches
(10,000 IoT readings, or 5,000 sentences of 10 words) and a micro-batch reads
``FILES_PER_TRIGGER`` files. Every micro-batch pays a fixed price: planning,
state-store commit, offset and commit logs, and some 50 ``chmod`` and
``readlink`` processes (Hadoop's local file system without its native library,
as pip installs it). Measured here on two shared cores, a micro-batch of one
line took over a second, so small micro-batches spend their time on that: one
file per trigger took about twice as long over 100,000 readings as five.
50,000 readings or 250,000 words per micro-batch make it small beside the work
while keeping the run a stream of micro-batches (ten over 500,000 readings),
with both cores busy in each (the files of a micro-batch are read as two
partitions, then shuffled into ``spark.sql.shuffle.partitions=2``).
Files are given increasing modification times, the order the file source
reads them in, so event time never goes back from one micro-batch to the next.

At a fixed rate a feeder thread in this driver writes the records as they
become due (``peer_kit.Feed``; ``t0`` once the query waits for data): every
``FEED_S`` a file of those due since the last, written aside and renamed in, so
Spark never sees part of one. The query runs on the default trigger (the next
micro-batch as soon as the last ends, every new file in it), Spark's lowest
latency short of its experimental continuous mode, which has no aggregation.
So the latency measured is Spark's: up to ``FEED_S`` waiting for the file, the
file source's listing of the directory, and the micro-batch (for IoT's windows,
two: the watermark a micro-batch moves closes its windows in the next). Spark's
socket source would skip the files but is documented as for testing only.

Warm-up: Spark gets a warm-up query over the first ``BENCH_SPARK_WARMUP``
records first (default 50,000; 0 for none), so the JIT and planner are warm, as
a long-running Spark job would be (cold, the first micro-batch took some 7 s).
It is the same query (the workload's function, the same output mode and
trigger settings, the IoT sentinel after the records so its windows close) in
the same session, over files of its own in another directory, with a sink that
collects each micro-batch and drops it; it runs until it has processed all of
them (``processAllAvailable``) and is stopped before the measured query
starts, so neither the results nor the start mark include it (the CPU seconds
``bench/peers.py`` samples per process do).

The session is ``local[2]`` (the two cores Headwater's two instances use), with
the UI off and a 1 GiB driver heap. The run's start is the query's start, once
the session is up, warmed up (and the files are written); its end is when the sink
(``foreachBatch``, collecting each micro-batch to the driver) holds every
expected result. The JVM is a child process of this driver.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamWriter

from bench.peer_kit import (
    DATA,
    EXPECT,
    OUT,
    RATE,
    Feed,
    LatencyKey,
    Summary,
    read_batches,
    write_arrivals,
    write_result,
)

FILE_BATCHES = 10
FILES_PER_TRIGGER = 5
FEED_S = 0.05  # at a fixed rate: a new file every so often
TIMEOUT_S = 600.0
WARMUP = int(os.environ.get("BENCH_SPARK_WARMUP", "50000"))  # records; 0: no warm-up


def session(name: str) -> SparkSession:
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    spark = (
        SparkSession.builder.master("local[2]")
        .appName(name)
        .config("spark.driver.memory", "1g")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def write_files(
    directory: Path,
    lines: Callable[[Any], bytes],
    tail: Iterable[bytes] = (),
    limit: int | None = None,
) -> int:
    """The data's batches (their first ``limit`` items, if given) as text files of
    ``FILE_BATCHES`` batches, one item a line, then ``tail`` in a file of its own; returns
    the number of files. Each file's modification time is a second after the one before
    (the file source reads files in that order)."""
    chunks: list[list[bytes]] = [[]]
    items = 0
    for batch in read_batches(DATA):
        if limit is not None and items >= limit:
            break
        kept = batch if limit is None else batch[: limit - items]
        items += len(kept)
        if len(chunks[-1]) == FILE_BATCHES:
            chunks.append([])
        chunks[-1].append(b"".join(lines(item) + b"\n" for item in kept))
    last = [line + b"\n" for line in tail]
    if last:
        chunks.append(last)
    first = time.time() - len(chunks) - 60
    for i, chunk in enumerate(chunks):
        path = directory / f"part-{i:05d}.txt"
        path.write_bytes(b"".join(chunk))
        os.utime(path, (first + i, first + i))
    return len(chunks)


class Collect:
    """The ``foreachBatch`` sink: collects each micro-batch to the driver and keeps its rows;
    done once the summary's ``until`` figure reaches ``BENCH_EXPECT``. ``keep`` picks the rows
    that are results. At a fixed rate it notes when each arrived (once collected) and writes
    them by ``key`` before the summary. Called on the driver's callback thread, one
    micro-batch at a time."""

    def __init__(
        self,
        summary: Summary,
        until: str,
        key: LatencyKey,
        keep: Callable[[Any], bool] | None = None,
    ) -> None:
        self.summary, self.until, self.key = summary, until, key
        self.keep = keep or (lambda row: True)
        self.results: list[tuple[Any, ...]] = []
        self.times: list[float] = []
        self.done = threading.Event()
        self.start = 0.0

    def __call__(self, batch: DataFrame, epoch: int) -> None:
        rows = batch.collect()
        now = time.time()
        kept = [tuple(r) for r in rows if self.keep(r)]
        self.results.extend(kept)
        if RATE:
            self.times.extend(now for _ in kept)
        if not self.done.is_set():
            summary = self.summary(self.results)
            if summary[self.until] >= EXPECT:
                if RATE:  # first: the result file is what the bench waits for
                    keys = [self.key(r) for r in self.results]
                    write_arrivals(OUT + ".lat", keys, self.times)
                write_result(OUT, {"start": self.start, **summary}, now)
                self.done.set()


class Feeder(threading.Thread):
    """At a fixed rate: every ``FEED_S``, the records due since the last file as a new file
    in ``directory`` (written in ``staging``, then renamed in), then ``tail`` in a file of
    its own. Starts the feed's clock, and the sink's start, with its first file."""

    def __init__(
        self,
        directory: Path,
        staging: Path,
        lines: Callable[[Any], bytes],
        tail: Iterable[bytes],
        sink: Collect,
    ) -> None:
        super().__init__(name="bench-feeder", daemon=True)
        self.directory, self.staging, self.lines, self.sink = directory, staging, lines, sink
        self.tail = [line + b"\n" for line in tail]
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.files = 0

    def run(self) -> None:
        try:
            self._feed()
        except BaseException as e:  # reported by the driver's wait
            self.error = e

    def _feed(self) -> None:
        feed = Feed(DATA, RATE)
        end = False
        while not end and not self.stop.is_set():
            tick = time.monotonic() + FEED_S
            due: list[Any] = []
            while True:  # everything due by now; and whether that was the last
                got = feed.take()
                if not self.sink.start:
                    self.sink.start = feed.t0
                if got is None:
                    end = True
                    break
                if not got:
                    break
                due.extend(got)
            if due:
                self._write([self.lines(item) + b"\n" for item in due])
            if end and self.tail:
                self._write(self.tail)
            self.stop.wait(max(0.0, tick - time.monotonic()))

    def _write(self, lines: list[bytes]) -> None:
        name = f"part-{self.files:05d}.txt"
        staged = self.staging / name
        staged.write_bytes(b"".join(lines))
        os.replace(staged, self.directory / name)
        self.files += 1


def _wait_for_data(streaming: StreamingQuery, timeout: float = 120.0) -> None:
    """Until the query's first look at its (empty) source: the query has started."""
    deadline = time.monotonic() + timeout
    while streaming.status["message"] != "Waiting for data to arrive":
        if streaming.exception() is not None or not streaming.isActive:
            raise RuntimeError(f"the query stopped: {streaming.exception()}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the query did not start: {streaming.status}")
        time.sleep(0.01)


def _writer(
    spark: SparkSession,
    query: Callable[[SparkSession, DataFrame], DataFrame],
    mode: str,
    directory: Path,
    checkpoint: Path,
    sink: Callable[[DataFrame, int], None],
    rated: bool,
) -> DataStreamWriter:
    """The query over the text files in ``directory`` into ``sink``: at maximum rate
    (not ``rated``), ``FILES_PER_TRIGGER`` files a micro-batch; else the default trigger."""
    reader = spark.readStream
    if not rated:
        reader = reader.option("maxFilesPerTrigger", FILES_PER_TRIGGER)
    return (
        query(spark, reader.text(str(directory)))
        .writeStream.outputMode(mode)
        .option("checkpointLocation", str(checkpoint))
        .foreachBatch(sink)
    )


def _discard(batch: DataFrame, epoch: int) -> None:
    batch.collect()


def warm_up(
    spark: SparkSession,
    query: Callable[[SparkSession, DataFrame], DataFrame],
    mode: str,
    lines: Callable[[Any], bytes],
    tail: Iterable[bytes],
    work: Path,
) -> None:
    """The same query over the first ``WARMUP`` records (then ``tail``) into a sink that
    drops what it collects, until it has processed them all; then stopped."""
    if WARMUP <= 0:
        return
    inputs = work / "warmup"
    inputs.mkdir()
    write_files(inputs, lines, tail, limit=WARMUP)
    writer = _writer(spark, query, mode, inputs, work / "warmup-checkpoint", _discard, bool(RATE))
    streaming = writer.start()
    try:
        streaming.processAllAvailable()
    finally:
        streaming.stop()


def run(
    name: str,
    query: Callable[[SparkSession, DataFrame], DataFrame],
    mode: str,
    lines: Callable[[Any], bytes],
    sink: Collect,
    tail: Iterable[bytes] = (),
) -> None:
    """Warm up (``warm_up``); write the files (at a fixed rate: start the feeder once the
    query has started), start the query over them, wait for the sink, stop.

    ``query`` turns the stream of lines (one ``value`` column) into the results;
    ``mode`` is the output mode (``append`` or ``update``)."""
    work = Path(OUT + ".spark")
    inputs, staging = work / "input", work / "staging"
    inputs.mkdir(parents=True)
    staging.mkdir()
    tail = list(tail)  # for the warm-up, then the run
    spark = session(name)
    feeder = Feeder(inputs, staging, lines, tail, sink) if RATE else None
    try:
        warm_up(spark, query, mode, lines, tail, work)
        files = 0 if feeder else write_files(inputs, lines, tail)
        writer = _writer(spark, query, mode, inputs, work / "checkpoint", sink, bool(feeder))
        if not feeder:
            sink.start = time.time()
        streaming = writer.start()
        try:
            if feeder:
                _wait_for_data(streaming)
                feeder.start()
            deadline = time.monotonic() + TIMEOUT_S
            while not sink.done.wait(0.1):
                if streaming.exception() is not None or not streaming.isActive:
                    raise RuntimeError(f"the query stopped: {streaming.exception()}")
                if feeder and feeder.error is not None:
                    raise RuntimeError("the feeder failed") from feeder.error
                if time.monotonic() > deadline:
                    files = feeder.files if feeder else files
                    raise RuntimeError(
                        f"{name}: the sink has {sink.summary(sink.results)} of {EXPECT} "
                        f"after {TIMEOUT_S:.0f}s over {files} files"
                    )
        finally:
            if feeder:
                feeder.stop.set()
                if feeder.is_alive():
                    feeder.join()
            streaming.stop()
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
