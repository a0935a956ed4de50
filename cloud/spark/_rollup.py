"""``headwater spark rollup``: a spec's rollups of a landed dataset, exactly once.

One streaming query per grain of the spec (``_rollup_spec.RollupSpec``), each
over the dataset's stream (``_datasets.Landing.stream``), each with its own
checkpoint (``CHECKPOINT/<grain>``):

    dataset -> event_time = the spec's time column -> withWatermark(event_time, WATERMARK)
      -> each row once per group, its other groups' keys NULL, the group's index in _g
      -> groupBy(window(event_time, the grain's length), _g, every key column)
      -> the spec's measures
      -> UPDATE output mode -> foreachBatch: split by _g, upsert into <grain>_<group>

Why this is exactly once through a SIGKILL of the driver at any moment:
Spark writes a micro-batch's offsets before running it and its commit after
the sink returned; the state store versions follow the batch ids. A driver
killed before the commit re-runs that batch on restart with the same offsets
(the same files) over the state of the batch before. In update mode the sink
gets each changed window's whole current aggregate, not a delta, and
``_warehouse.upsert`` replaces rows by key with one atomic file replace per
partition, so applying a batch a second time writes the same rows again.
Counts, sums, min and max are then exact; a quantile sketch is approximate and
may differ in its last digits when a batch is re-run.

Windows are written while they are open (the row of the current hour grows
with each micro-batch) and are final once the watermark passes their end; rows
whose event time is below the watermark when they arrive are dropped by Spark
and counted (``numRowsDroppedByWatermark``), and each pass prints how many.
A checkpoint remembers the spec it was made for (``_spec.json``): a changed spec
is refused there rather than resumed over state of another shape.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.common._exceptions import HeadwaterError

from . import _warehouse
from ._datasets import Landing, Layout
from ._rollup_spec import Measure, RollupSpec, SpecError, check
from ._session import session, small_job_conf, stoppable_start

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery

WINDOW = ("window_start", "window_end")
SUM_TYPE = "decimal(38,12)"  # each value rounded to 12 decimal places, then summed exactly
GROUP = "_g"  # the group's index in the spec, on each exploded row


@dataclass(frozen=True)
class RollupConfig:
    """One rollup run: what it rolls up, where it reads and writes, how it paces itself."""

    spec: RollupSpec
    landing: Path
    warehouse: Path
    checkpoint: Path
    once: bool = False
    interval_s: float = 5.0
    master: str | None = None
    max_files: int | None = None  # per micro-batch (maxFilesPerTrigger); None: all new
    source: str = "files"  # "files" (Spark's file source) or "manifests" (_landing_source)


def _measure(m: Measure, count: Column) -> Column:
    from pyspark.sql import functions as F

    col = F.col(m.column) if m.column is not None else None
    if m.fn == "count":
        return F.count(col if col is not None else F.lit(1))
    assert col is not None
    if m.fn in ("sum", "mean"):
        # an exact decimal sum: the same whatever order the rows come in (a double sum is not)
        total = F.sum(col.cast(SUM_TYPE)).cast("double")
        return total if m.fn == "sum" else total / F.count(col)
    if m.fn == "quantile":
        return F.percentile_approx(col, m.q if m.q is not None else 0.5)
    if m.fn in ("count_if", "rate_if"):
        hits = F.count(F.when(col, 1))
        return hits if m.fn == "count_if" else hits / count
    return {"min": F.min, "max": F.max, "stddev": F.stddev_samp}[m.fn](col)


def event_time(spec: RollupSpec, layout: Layout) -> Column:
    from pyspark.sql import functions as F

    if layout.columns.get(spec.time) == "TIMESTAMP":
        return F.col(spec.time)
    fn = {"s": F.timestamp_seconds, "ms": F.timestamp_millis, "us": F.timestamp_micros}
    return fn[spec.time_unit](F.col(spec.time))


def aggregate(rows: DataFrame, spec: RollupSpec, layout: Layout, grain: str) -> DataFrame:
    """The streaming aggregation of one grain: a row per (window, group, its keys)."""
    from pyspark.sql import functions as F

    keys = spec.keys()
    types = {**layout.columns, **dict.fromkeys(layout.partitions, "STRING")}
    per_group = [
        F.struct(
            F.lit(i).alias(GROUP),
            *((F.col(k) if k in cols else F.lit(None).cast(types[k])).alias(k) for k in keys),
        )
        for i, cols in enumerate(spec.groups.values())
    ]
    measured = {m.column for m in spec.measures if m.column is not None} - set(keys)
    exploded = (
        rows.withColumn("_event_time", event_time(spec, layout))
        .withWatermark("_event_time", spec.watermark)
        .select("_event_time", *measured, F.explode(F.array(*per_group)).alias("_k"))
        .select("_event_time", *measured, "_k.*")
    )
    count = F.count(F.lit(1))
    agg = exploded.groupBy(F.window("_event_time", spec.grains[grain]), GROUP, *keys).agg(
        *(_measure(m, count).alias(m.name) for m in spec.measures)
    )
    return agg.select(
        GROUP,
        *keys,
        F.col("window.start").alias("window_start"),
        F.col("window.end").alias("window_end"),
        F.date_format("window.start", "yyyy-MM-dd").alias("date"),
        *(m.name for m in spec.measures),
    )


def write_batch(warehouse: Path, spec: RollupSpec, grain: str) -> Callable[[DataFrame, int], None]:
    """The foreachBatch sink of a grain: split by group, upsert each group's table."""
    import pyarrow.compute as pc

    groups = list(spec.groups.items())
    keys = spec.keys()
    measures = [m.name for m in spec.measures]

    def sink(batch: DataFrame, batch_id: int) -> None:
        rows = batch.toArrow()  # runs the batch once: the state store commits here
        for i, (group, cols) in enumerate(groups):
            mine = rows.filter(pc.equal(rows.column(GROUP), i))
            drop = [GROUP, *(k for k in keys if k not in cols)]
            table = mine.drop_columns(drop).select([*cols, *WINDOW, "date", *measures])
            _warehouse.upsert(warehouse / f"{grain}_{group}", table, (*cols, WINDOW[0]), "date")

    return sink


def start(spark: SparkSession, cfg: RollupConfig, layout: Layout, grain: str) -> StreamingQuery:
    """Start one grain's query (its own checkpoint folder)."""
    rows = Landing(cfg.landing).stream(
        spark, cfg.spec.dataset, source=cfg.source, max_files=cfg.max_files
    )
    writer = (
        aggregate(rows, cfg.spec, layout, grain)
        .writeStream.queryName(grain)
        .outputMode("update")
        .option("checkpointLocation", str(cfg.checkpoint / grain))
        .foreachBatch(write_batch(cfg.warehouse, cfg.spec, grain))
    )
    if cfg.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{cfg.interval_s} seconds")
    return writer.start()


def claim_checkpoint(checkpoint: Path, spec: RollupSpec) -> None:
    """Record ``spec`` in ``checkpoint`` (``_spec.json``), or refuse one made for another."""
    path = checkpoint / "_spec.json"
    mine = {"fingerprint": spec.fingerprint(), "tables": spec.tables()}
    try:
        theirs = json.loads(path.read_text())
    except FileNotFoundError:
        made = [g for g in spec.grains if (checkpoint / g / "offsets").is_dir()]
        if made:
            raise SpecError(
                f"the checkpoint {checkpoint} holds queries ({', '.join(made)}) but no spec: "
                "made before rollups had specs; give a new --checkpoint (the rollup then "
                "recomputes every window from the landing and upserts the same keys)"
            ) from None
        checkpoint.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(mine))
        tmp.replace(path)
        return
    except (OSError, ValueError) as exc:
        raise SpecError(f"{path} cannot be read ({exc}): give another --checkpoint") from None
    if not isinstance(theirs, dict) or theirs.get("fingerprint") != mine["fingerprint"]:
        raise SpecError(
            f"the checkpoint {checkpoint} was made for another spec (its tables: "
            f"{', '.join(theirs.get('tables', [])) if isinstance(theirs, dict) else '?'}): "
            "a changed spec starts over: give a new --checkpoint and a new --warehouse"
        )


@dataclass
class Totals:
    """What the passes did, per grain: micro-batches, rows in, late rows dropped."""

    batches: int = 0
    rows: int = 0
    dropped: int = 0
    watermark: str = ""
    busy_ms: int = 0  # the micro-batches' own time (Spark's triggerExecution), start-up aside


def describe(progress: dict[str, Any], totals: Totals) -> str:
    """A line for one micro-batch's progress (Spark's StreamingQueryProgress as a dict)."""
    rows = int(progress.get("numInputRows", 0))
    ops = progress.get("stateOperators") or [{}]
    dropped = int(ops[0].get("numRowsDroppedByWatermark", 0))
    updated = int(ops[0].get("numRowsUpdated", 0))
    watermark = (progress.get("eventTime") or {}).get("watermark", "")
    totals.batches += 1
    totals.rows += rows
    totals.dropped += dropped
    totals.watermark = watermark
    totals.busy_ms += int((progress.get("durationMs") or {}).get("triggerExecution", 0))
    return (
        f"{progress.get('name')} batch {progress.get('batchId')}: {rows} rows rolled up, "
        f"{updated} windows updated, {dropped} late rows dropped, watermark {watermark}"
    )


def start_all(spark: SparkSession, cfg: RollupConfig, layout: Layout) -> list[StreamingQuery]:
    """Check the spec against the dataset, claim the checkpoint, start a query per grain."""
    check(cfg.spec, layout)
    claim_checkpoint(cfg.checkpoint, cfg.spec)
    return [start(spark, cfg, layout, grain) for grain in cfg.spec.grains]


def wait_for_layout(
    cfg: RollupConfig, out: Callable[[str], None], stop: threading.Event | None = None
) -> Layout | None:
    """The dataset's layout once a file of it has landed; None at once if ``cfg.once`` and
    nothing has. ``DatasetError`` for a name the landing does not have while it has others."""
    from ._datasets import DatasetError

    landing = Landing(cfg.landing)
    landing.check_root()
    stop = stop or threading.Event()
    said = False
    while True:
        if cfg.spec.dataset in landing.names():
            try:
                return landing.layout(cfg.spec.dataset)
            except DatasetError:
                if not (cfg.landing / cfg.spec.dataset / "_manifests").is_dir():
                    raise
        elif landing.names():
            landing.path(cfg.spec.dataset)  # raises, naming the datasets there
        if cfg.once:
            return None
        if not said:
            out(f"waiting for {cfg.spec.dataset!r} to land under {cfg.landing}")
            said = True
        if stop.wait(min(cfg.interval_s, 2.0)):
            return None


def run(cfg: RollupConfig, out: Callable[[str], None] = print) -> dict[str, Totals]:
    """Run the rollup: one pass (``cfg.once``) or until interrupted; returns the totals.

    Blocks. Holds the warehouse lock throughout. Prints a line per micro-batch
    with data, and at the end of a pass the totals. Waits for the dataset's first
    commit when continuous; with ``once`` and nothing landed, says so and returns.
    """
    with _warehouse.lock(cfg.warehouse):
        layout = wait_for_layout(cfg, out)
        if layout is None:
            out(f"nothing of {cfg.spec.dataset!r} has landed under {cfg.landing}: nothing to do")
            return {}
        check(cfg.spec, layout)  # before Spark starts: a wrong column costs no JVM
        with stoppable_start():  # Ctrl-C until its queries run: one line, no JVM left
            try:
                small = small_job_conf(cfg.landing / cfg.spec.dataset, spark_master=cfg.master)
                spark = session("headwater-rollup", cfg.master, small)
            except HeadwaterError:
                raise
            except Exception as e:  # the JVM did not start, or the master is not there
                raise HeadwaterError(
                    f"could not start Spark on {cfg.master or 'local[*]'}: {e}".splitlines()[0]
                ) from e
            spark.sparkContext.setLogLevel("ERROR")
            try:
                queries = start_all(spark, cfg, layout)
            except BaseException:
                spark.stop()
                raise
        totals = {grain: Totals() for grain in cfg.spec.grains}
        done = threading.Event()
        seen: dict[str, int] = {}
        try:
            while True:
                for q in queries:
                    _report(q, seen, totals, out)
                if all(not q.isActive for q in queries):
                    break
                done.wait(0.5)
            for q in queries:
                _report(q, seen, totals, out)
                if q.exception() is not None:
                    raise HeadwaterError(f"the {q.name} rollup failed: {_first_line(q)}")
        finally:
            for q in queries:
                q.stop()
            spark.stop()
        for grain, t in totals.items():
            out(
                f"{grain}: {t.batches} batches, {t.rows} rows rolled up, "
                f"{t.dropped} late rows dropped, watermark {t.watermark or 'none yet'}"
            )
        return totals


def _first_line(q: StreamingQuery) -> str:
    exc = q.exception()
    text = str(getattr(exc, "desc", None) or exc)
    return text.strip().splitlines()[0] if text.strip() else type(exc).__name__


def _report(
    q: StreamingQuery, seen: dict[str, int], totals: dict[str, Totals], out: Callable[[str], None]
) -> None:
    """Print the progress of the micro-batches of ``q`` not printed yet (those with rows)."""
    last = seen.get(q.name, -1)
    for p in q.recentProgress:
        progress = json.loads(p.json)
        batch = int(progress["batchId"])
        if batch <= last:
            continue
        seen[q.name] = batch
        if progress.get("numInputRows"):
            out(describe(progress, totals[q.name]))
    sys.stdout.flush()
