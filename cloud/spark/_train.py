"""``headwater spark train``: fit the anomaly model on the landed readings, evaluate, export it.

Reads the landing zone's ``readings`` dataset as a batch (Spark's partition
discovery: ``date=``/``site=`` folders; hidden in-progress files and
``_manifests`` are skipped), gives each reading the features the edge has
(the sensor's previous ``[value, smoothed]``, by seq), and splits each sensor's
history by event time: the earlier ``1 - holdout`` of its ``ts`` span trains,
the latest ``holdout`` (default 0.25) is held out. The model (see
``common/models``: a robust per-sensor regression of the value on the previous
value, a gate on the previous reading, a fallback on the smoothed level) is
fitted with MLlib on the training rows (``_train_fit``), then scored on the
held-out rows in Spark with the very parameters of the document and compared
with the truth (``labels``) and with the hand-set detector's flags (the landed
``anomaly`` column of rows whose ``model`` is ""). The document carries the
range it was fitted on and those figures; it has no version (the registry
assigns one).
"""

from __future__ import annotations

import importlib
import inspect
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.common._exceptions import HeadwaterError
from headwater.common.models import FORMAT, KIND, MAX_SENSORS, check_doc

from ._progress import Progress
from ._train_fit import DEFAULT, fit

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

DATASET = "readings"
COLUMNS = ("site", "sensor", "seq", "ts", "value", "smoothed", "anomaly")
LABEL_FIELDS = ("site", "sensor", "seq", "ts", "value")
DEFAULT_LABELS = "headwater._demo.sensors:injected"
MIN_ROWS = 50  # training rows (with a previous reading) below which there is nothing to fit
MIN_SENSOR_ROWS = 20  # a sensor with fewer training rows gets the pooled default
# the stages ``train`` reports, with their shares of a run of ``headwater spark train`` on
# the demo's history (bench/demo_train.py; the command adds its own before and after)
READING, FITTING, EVALUATING = "reading the landing", "fitting", "evaluating"
STAGES = ((READING, 0.3), (FITTING, 0.4), (EVALUATING, 0.1))
SPLIT = "per sensor: readings after from_ts + (1 - holdout) * (to_ts - from_ts) of its ts"


@dataclass(frozen=True)
class Labels:
    """The truth per reading: ``fn`` called with the row's fields it names (``fields``)."""

    spec: str
    fn: Callable[..., Any]
    fields: tuple[str, ...]


def load_labels(spec: str) -> Labels:
    """``MODULE:FUNCTION``, a function whose parameters are some of ``LABEL_FIELDS``."""
    module, _, attr = spec.partition(":")
    if not module or not attr:
        raise HeadwaterError(f"--labels {spec!r}: give MODULE:FUNCTION, e.g. {DEFAULT_LABELS}")
    try:
        fn = getattr(importlib.import_module(module), attr)
    except ImportError as exc:
        raise HeadwaterError(f"--labels {spec!r}: cannot import {module!r} ({exc})") from None
    except AttributeError:
        raise HeadwaterError(f"--labels {spec!r}: {module!r} has no {attr!r}") from None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        raise HeadwaterError(f"--labels {spec!r}: not a function") from None
    unknown = [p for p in params if p not in LABEL_FIELDS]
    if unknown or not params:
        raise HeadwaterError(
            f"--labels {spec!r}: its parameters must be some of {', '.join(LABEL_FIELDS)} "
            f"(the reading's fields, passed by name); it has {', '.join(params) or 'none'}"
        )
    return Labels(spec, fn, tuple(params))


def readings_path(landing: Path) -> Path:
    """``landing/readings``; ``HeadwaterError`` if it holds no committed Parquet file."""
    path = landing / DATASET
    if not path.is_dir():
        raise HeadwaterError(f"--landing {str(landing)!r}: no {DATASET}/ dataset there")
    for file in path.rglob("*.parquet"):
        if not any(part.startswith((".", "_")) for part in file.relative_to(path).parts):
            return path
    raise HeadwaterError(f"--landing {str(landing)!r}: {DATASET}/ has no committed file yet")


def train(
    spark: SparkSession,
    landing: Path,
    *,
    name: str = "iot-anomaly",
    holdout: float = 0.25,
    labels: Labels | None = None,
    now: Callable[[], float] = time.time,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """The artifact's document for the readings landed under ``landing`` (see the module doc).

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
        rows = _read(spark, landing, holdout)
        stage.rows = rows.count()  # fills the cache every later stage reads
    try:
        return _train(spark, rows, name, holdout, labels, now, progress)
    finally:
        rows.unpersist()


def _read(spark: SparkSession, landing: Path, holdout: float) -> DataFrame:
    """The landed readings, each with its sensor's previous reading and its split (cached)."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    # partition values stay strings ("site1", "2024-01-01"): no guessing of types
    spark.conf.set("spark.sql.sources.partitionColumnTypeInference.enabled", "false")
    landed = spark.read.parquet(str(readings_path(landing)))
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
        evaluation = _evaluate(spark, rows.where(F.col("test")), params, labels, holdout)
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


_FLAT = (
    ("level", "center"),
    ("level", "threshold"),
    ("gate", "center"),
    ("gate", "threshold"),
    ("next", "intercept"),
    ("next", "slope"),
    ("next", "threshold"),
    ("fallback", "intercept"),
    ("fallback", "slope"),
    ("fallback", "threshold"),
)


def flag_column(p: Callable[[str, str], Column]) -> Column:
    """``AnomalyModel.flag`` as a Spark column, term for term (the same IEEE arithmetic)."""
    from pyspark.sql import functions as F

    value, pv, ps = F.col("value"), F.col("prev_value"), F.col("prev_smoothed")
    first = F.abs(value - p("level", "center")) > p("level", "threshold")
    gated = F.abs(pv - ps - p("gate", "center")) > p("gate", "threshold")
    fallback = F.abs(value - (p("fallback", "intercept") + p("fallback", "slope") * ps))
    nxt = F.abs(value - (p("next", "intercept") + p("next", "slope") * pv))
    return (
        F.when(pv.isNull(), first)
        .when(gated, fallback > p("fallback", "threshold"))
        .otherwise(nxt > p("next", "threshold"))
    )


def _evaluate(
    spark: SparkSession,
    test: DataFrame,
    params: dict[str, dict[str, dict[str, float]]],
    labels: Labels,
    holdout: float,
) -> dict[str, Any]:
    from pyspark.sql import functions as F
    from pyspark.sql.types import BooleanType

    names = [f"{part}_{key}" for part, key in _FLAT]
    table = spark.createDataFrame(
        [(g, *(p[part][key] for part, key in _FLAT)) for g, p in params.items() if g != DEFAULT],
        "sensor string, " + ", ".join(f"{n} double" for n in names),
    )
    default = params[DEFAULT]

    def p(part: str, key: str) -> Column:
        return F.coalesce(F.col(f"{part}_{key}"), F.lit(default[part][key]))

    fn, fields = labels.fn, labels.fields

    def truth(*values: Any) -> bool:
        return bool(fn(**dict(zip(fields, values, strict=True))))

    label = F.udf(truth, BooleanType())(*fields)
    scored = test.join(table, "sensor", "left").select(
        flag_column(p).alias("predicted"),
        label.alias("truth"),
        F.col("anomaly").alias("handset"),
        (F.col("model") == "").alias("by_handset"),
    )
    counts = scored.agg(
        F.count("*").alias("rows"),
        *_counts("model", F.col("predicted"), F.lit(True)),
        F.sum(F.col("by_handset").cast("long")).alias("handset_rows"),
        *_counts("handset", F.col("handset"), F.col("by_handset")),
    ).first()
    assert counts is not None
    return {
        "holdout": holdout,
        "split": SPLIT,
        "labels": labels.spec,
        "test_rows": int(counts["rows"]),
        "model": figures(int(counts["rows"]), *(int(counts[f"model_{c}"] or 0) for c in _C)),
        "handset": figures(
            int(counts["handset_rows"] or 0), *(int(counts[f"handset_{c}"] or 0) for c in _C)
        ),
    }


_C = ("tp", "fp", "fn", "tn")


def _counts(who: str, predicted: Column, among: Column) -> list[Column]:
    from pyspark.sql import functions as F

    truth = F.col("truth")
    cases = (predicted & truth, predicted & ~truth, ~predicted & truth, ~predicted & ~truth)
    return [
        F.sum((among & case).cast("long")).alias(f"{who}_{c}")
        for c, case in zip(_C, cases, strict=True)
    ]


def figures(rows: int, tp: int, fp: int, fn: int, tn: int) -> dict[str, Any]:
    """Precision, recall and F1 (None where undefined: nothing flagged, nothing to find)."""
    precision = tp / (tp + fp) if tp + fp else None
    recall = tp / (tp + fn) if tp + fn else None
    f1 = None
    if precision is not None and recall is not None:
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {
        "rows": rows,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "precision": precision,
        "recall": recall,
        "f1": f1,
    }
