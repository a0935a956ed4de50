"""The IoT example's anomaly model, trained with Spark MLlib on the landed readings.

    headwater spark train --landing $IOT_OUT/landing --out iot-anomaly.json   # runs this file

``headwater spark train`` is this file's command: it loads it by path, checks its
arguments with ``load_labels`` and ``landed``, starts Spark, calls ``train`` with the
landed ``readings`` (``headwater.spark.Landing``) and prints, writes and registers the
document it returns. It is a Spark job too (``run(spark, ctx)``, see ``headwater.spark``):
it trains on ``ctx.landing.read("readings")`` and writes the artifact to the file
``ctx.params["out"]``.

``train`` gives each reading the features the edge has (the sensor's previous
``[value, smoothed]``, by seq) and splits each sensor's history by event time: the
earlier ``1 - holdout`` of its ``ts`` span trains, the latest ``holdout`` (default
0.25) is held out. The model (see ``headwater.models``: a robust per-sensor regression
of the value on the previous value, a gate on the previous reading, a fallback on the
smoothed level) is fitted with MLlib on the training rows (``anomaly_fit``), then
scored on the held-out rows in Spark with the very parameters of the document and
compared with the truth and with the hand-set detector's flags (``anomaly_eval``). The
document carries the range it was fitted on and those figures; it has no version (the
registry assigns one).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from anomaly_eval import DEFAULT_LABELS, Labels, evaluate, load_labels
from anomaly_fit import DEFAULT, fit

from headwater import HeadwaterError
from headwater.models import (
    FORMAT,
    KIND,
    MAX_SENSORS,
    NAME,
    check_doc,
    dump_model,
    training_meta,
)
from headwater.spark import Progress

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from headwater.spark import JobContext

__all__ = [
    "DATASET",
    "DEFAULT_LABELS",
    "MODEL",
    "STAGES",
    "Labels",
    "landed",
    "load_labels",
    "registry_meta",
    "run",
    "train",
]

DATASET = "readings"
MODEL = "iot-anomaly"  # the model's name unless told otherwise
COLUMNS = ("site", "sensor", "seq", "ts", "value", "smoothed", "anomaly")
HOLDOUT = 0.25
MIN_ROWS = 50  # training rows (with a previous reading) below which there is nothing to fit
MIN_SENSOR_ROWS = 20  # a sensor with fewer training rows gets the pooled default
# the stages ``train`` reports, with their shares of a run of ``headwater spark train`` on
# the demo's history (bench/demo_train.py; the command adds its own before and after)
READING, FITTING, EVALUATING = "reading the landing", "fitting", "evaluating"
STAGES = ((READING, 0.3), (FITTING, 0.4), (EVALUATING, 0.1))


def landed(landing: Path) -> Path:
    """``landing/readings``; ``HeadwaterError`` if it holds no committed Parquet file (a
    check without Spark: the command makes it before Spark starts)."""
    path = landing / DATASET
    if not path.is_dir():
        raise HeadwaterError(f"--landing {str(landing)!r}: no {DATASET}/ dataset there")
    for file in path.rglob("*.parquet"):
        if not any(part.startswith((".", "_")) for part in file.relative_to(path).parts):
            return path
    raise HeadwaterError(f"--landing {str(landing)!r}: {DATASET}/ has no committed file yet")


def train(
    spark: SparkSession,
    readings: DataFrame,
    *,
    name: str = MODEL,
    holdout: float = HOLDOUT,
    labels: Labels | None = None,
    now: Callable[[], float] = time.time,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The artifact's document for the landed ``readings`` (a batch DataFrame of the
    dataset, e.g. ``Landing(root).read(spark, DATASET)``; see the module doc).

    ``HeadwaterError`` for a landing with too little history. Blocks for the
    Spark jobs (seconds in local mode for a few thousand readings). ``progress``
    (stages ``STAGES`` among its own) hears of each stage: reading, fitting,
    evaluating.
    """
    if not 0.0 < holdout < 1.0:
        raise HeadwaterError(f"--holdout {holdout}: a fraction strictly between 0 and 1")
    labels = labels or load_labels(DEFAULT_LABELS)
    progress = progress or Progress(STAGES, None)
    with progress.stage(READING) as stage:
        rows = _prepare(readings, holdout)
        stage.rows = rows.count()  # fills the cache every later stage reads
    try:
        return _train(spark, rows, name, holdout, labels, now, progress)
    finally:
        rows.unpersist()


def _prepare(landed: DataFrame, holdout: float) -> DataFrame:
    """The landed readings, each with its sensor's previous reading and its split (cached)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    missing = [c for c in COLUMNS if c not in landed.columns]
    if missing:
        raise HeadwaterError(f"--landing: {DATASET} lacks the column(s) {', '.join(missing)}")
    model = F.col("model") if "model" in landed.columns else F.lit("")
    by_sensor = Window.partitionBy("sensor").orderBy("seq")  # the edge's keyed prev, by seq
    rows = landed.where(
        F.col("sensor").isNotNull() & F.col("seq").isNotNull() & F.col("ts").isNotNull()
    ).select(
        *COLUMNS,
        F.coalesce(model, F.lit("")).alias("model"),
        F.lag("value").over(by_sensor).alias("prev_value"),
        F.lag("smoothed").over(by_sensor).alias("prev_smoothed"),
    )
    span = rows.groupBy("sensor").agg(F.min("ts").alias("_lo"), F.max("ts").alias("_hi"))
    cut = F.col("_lo") + (F.col("_hi") - F.col("_lo")) * (1.0 - holdout)
    return rows.join(span, "sensor").withColumn("test", F.col("ts") > cut).cache()


def _train(
    spark: SparkSession,
    rows: DataFrame,
    name: str,
    holdout: float,
    labels: Labels,
    now: Callable[[], float],
    progress: Progress,
) -> dict[str, Any]:
    from pyspark.sql import functions as F

    with progress.stage(FITTING) as stage:
        history, own, params = _fit(spark, rows)
        trained = history.agg(
            F.min("ts").alias("from_ts"), F.max("ts").alias("to_ts"), F.count("*").alias("rows")
        ).first()
        assert trained is not None
        stage.rows = int(trained["rows"])
        stage.note = f"({len(own)} sensors of their own)"
    with progress.stage(EVALUATING) as stage:
        evaluation = evaluate(spark, rows.where(F.col("test")), params, labels, holdout)
        stage.rows = evaluation["test_rows"]
    doc: dict[str, Any] = {
        "format": FORMAT,
        "name": name,
        "kind": KIND,
        "params": {"default": params[DEFAULT], "sensors": {s: params[s] for s in own}},
        "trained": {
            "from_ts": int(trained["from_ts"]),
            "to_ts": int(trained["to_ts"]),
            "rows": int(trained["rows"]),
            "sensors": len(own),
        },
        "evaluation": evaluation,
        "created_at": round(now(), 3),
    }
    check_doc(doc)
    return doc


def _fit(
    spark: SparkSession, rows: DataFrame
) -> tuple[DataFrame, list[str], dict[str, dict[str, dict[str, float]]]]:
    """(the training rows, the sensors with a model of their own, every group's params)."""
    from pyspark.sql import functions as F

    history = rows.where(~F.col("test"))
    counts = {
        r["sensor"]: r["n"]
        for r in history.where(F.col("prev_value").isNotNull())
        .groupBy("sensor")
        .agg(F.count("*").alias("n"))
        .collect()
    }
    usable = sum(counts.values())
    if usable < MIN_ROWS:
        raise HeadwaterError(
            f"--landing: {usable} training readings with a previous one; at least {MIN_ROWS} "
            "are needed (let more history land, or lower --holdout)"
        )
    own = sorted(s for s, n in counts.items() if n >= MIN_SENSOR_ROWS)
    if len(own) > MAX_SENSORS:
        raise HeadwaterError(f"--landing: {len(own)} sensors; a model holds at most {MAX_SENSORS}")
    groups = [DEFAULT, *own]
    index = spark.createDataFrame(
        [(g, float(i)) for i, g in enumerate(groups)], "group string, gi double"
    )

    def grouped(df: DataFrame) -> DataFrame:
        """Each row under its sensor's group (if it has one) and under the pooled default."""
        per_sensor = df.withColumn("group", F.col("sensor")).join(index, "group")
        pooled = df.withColumn("group", F.lit(DEFAULT)).join(index, "group")
        return per_sensor.unionByName(pooled)

    everything = grouped(history).cache()
    try:
        return history, own, fit(everything, groups)
    finally:
        everything.unpersist()


def run(spark: SparkSession, ctx: JobContext) -> None:
    """The training as a job: the artifact of ``ctx.landing.read("readings")`` to the file
    ``ctx.params["out"]`` and/or registered with the master the job was run with
    (``ctx.register``: ``headwater spark run --master URL --token-file FILE``), its
    progress and a summary line on stdout.

    Parameters (strings): ``out``, ``name`` (default ``iot-anomaly``), ``holdout``
    (default 0.25), ``labels`` (``MODULE:FUNCTION``).
    """
    params = ctx.params
    out = Path(params["out"]) if params.get("out") else None
    if (out is None and ctx.registry is None) or (out is not None and not out.parent.is_dir()):
        raise HeadwaterError(
            "the parameter out=FILE (in an existing folder) says where the artifact goes; "
            "or run the job with a master (--master URL, an admin token) to register it"
        )
    name = params.get("name", MODEL)
    if not NAME.fullmatch(name):
        raise HeadwaterError(f"name={name!r}: 1-64 letters, digits, '.', '_' or '-'")
    try:
        holdout = float(params.get("holdout", HOLDOUT))
    except ValueError:
        raise HeadwaterError(f"holdout={params['holdout']!r}: not a number") from None
    labels = load_labels(params.get("labels", DEFAULT_LABELS))
    progress = Progress(STAGES, lambda line: print(line, flush=True))
    doc = train(
        spark,
        ctx.landing.read(DATASET),
        name=name,
        holdout=holdout,
        labels=labels,
        progress=progress,
    )
    data = dump_model(doc)
    if out is not None:
        tmp = out.with_name(f".{out.name}.tmp")
        tmp.write_bytes(data)
        tmp.replace(out)
    ctx.count(read=doc["trained"]["rows"] + doc["evaluation"]["test_rows"])
    f1 = doc["evaluation"]["model"]["f1"]
    print(
        f"{f'wrote {out}' if out is not None else 'trained'}: {name} on "
        f"{doc['trained']['rows']} readings of {doc['trained']['sensors']} sensors, "
        f"held-out F1 {'-' if f1 is None else f'{f1:.3f}'} ({len(data)} bytes)",
        flush=True,
    )
    if ctx.registry is not None:
        made = ctx.register(data, name, meta=registry_meta(doc))
        print(f"registered {made['name']} version {made['version']} (sha256 {made['sha256']})")


def registry_meta(doc: dict[str, Any]) -> dict[str, Any]:
    """The metadata the registry keeps with the artifact ``doc``: the dataset, the
    training range, the held-out figures and the output's range (a flag: 0 or 1)."""
    trained, model = doc["trained"], doc["evaluation"]["model"]
    return training_meta(
        dataset=DATASET,
        data_range={k: trained[k] for k in ("from_ts", "to_ts", "rows", "sensors")},
        evaluation={k: model[k] for k in ("rows", "precision", "recall", "f1")},
        output_range=[0, 1],
    )
