"""The evaluation of the IoT example's anomaly model: its flags on the held-out readings, in
Spark, against the truth and against the hand-set detector.

The truth is a function given as ``MODULE:FUNCTION`` (``load_labels``; default
``headwater._demo.sensors:injected``, the demo's rule for the spikes it injects) whose
parameters are some of a reading's fields, called per row with those fields by name (a
Python UDF: its module must be importable where Spark's Python workers run). The model's
flag is computed with the document's own parameters, term for term as
``AnomalyModel.flag`` (``flag_column``); the hand-set detector is scored on the rows it
flagged itself (landed ``model`` == "", its ``anomaly`` column). Figures: rows, tp, fp,
fn, tn, precision, recall, F1 (``figures``).
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from anomaly_fit import DEFAULT

from headwater import HeadwaterError

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession

LABEL_FIELDS = ("site", "sensor", "seq", "ts", "value")
DEFAULT_LABELS = "headwater._demo.sensors:injected"
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


def evaluate(
    spark: SparkSession,
    test: DataFrame,
    params: dict[str, dict[str, dict[str, float]]],
    labels: Labels,
    holdout: float,
) -> dict[str, Any]:
    """The document's ``evaluation``: the model (``params``, by group) and the hand-set
    detector on the held-out rows ``test`` (with ``prev_value``, ``prev_smoothed``, ``model``)."""
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
