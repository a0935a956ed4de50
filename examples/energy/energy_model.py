"""A user's Spark job that trains the energy example's own model and registers it as ONNX.

    headwater spark run examples/energy/energy_model.py --landing OUT/landing --warehouse WH
    headwater spark run examples/energy/energy_model.py --landing OUT/landing --warehouse WH \\
        --master $HEADWATER_MASTER --token-file ADMIN_TOKEN   # registers it

The model, ``energy-next-kwh``: a meter's energy in its next 15-minute interval, predicted
from its current reading. Each row of the landed ``meters`` is a training example whose
features are that reading's ``INPUTS`` (``kwh``, ``voltage``, in that order) and whose
label is the same meter's next reading's ``kwh`` (``lead`` over the meter's readings by
``seq``; a meter's last reading has none and is left out). A Spark MLlib
``DecisionTreeRegressor`` (a meter's consumption cycles, which a line cannot follow and a
tree can), in a ``Pipeline`` behind a ``VectorAssembler``, exported to ONNX with
``headwater.models.to_onnx``: one float input ``input`` of shape ``[None, 2]`` (the
columns of ``INPUTS``) and one output ``prediction`` (float, ``[None]``).

Evaluation: the latest ``holdout`` (``--param holdout=0.25``) of the readings' event time
is held out; the model is fitted on the rest and scored on it: ``mae``, ``rmse`` and the
``baseline_mae`` of predicting "the same as now". The metadata registered with it
(``headwater.models.training_meta``): the dataset, the training rows' range (``from_ts``,
``to_ts``, ``rows``, ``meters``), those figures, and ``output_range``, the predictions'
``[lo, hi]`` on the training rows.

Where it goes: with a master (``ctx.registry``) it is registered as the next version of
``--param name=`` (default ``MODEL``); else it is written to ``--param out=FILE``
(default ``WAREHOUSE/_models/energy-next-kwh.onnx``) for ``headwater models register``.

Scoring it on the edge: the energy pipeline's ``predict`` step (a
``headwater.models.ScoreBolt`` after ``sag``) scores each reading's ``MODEL_INPUTS``
with the version ``headwater models rollout`` ships to its agent, and lands the
prediction as ``predicted_kwh`` with its ``model_version``. The model's name and inputs
are ``energy_io``'s, which both files import.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from energy_io import MODEL, MODEL_INPUTS

if TYPE_CHECKING:
    from pyspark.ml import PipelineModel
    from pyspark.sql import DataFrame, Row, SparkSession

    from headwater.spark import JobContext

DATASET = "meters"
INPUTS = list(MODEL_INPUTS)  # the model's input columns, in this order (the edge's step's)
OUTPUT = "prediction"  # the ONNX graph's output: the next interval's kwh
LABEL = "kwh_next"
MIN_ROWS = 20


def run(spark: SparkSession, ctx: JobContext) -> None:
    from headwater.models import to_onnx, training_meta

    holdout = float(ctx.params.get("holdout", "0.25"))
    if not 0.0 < holdout < 1.0:
        raise ValueError(f"holdout={holdout}: a fraction strictly between 0 and 1")
    name = ctx.params.get("name", MODEL)
    if DATASET not in ctx.landing.names():
        raise ValueError(f"no {DATASET!r} landed in {ctx.landing.root}: nothing to train on")
    examples = features(ctx.landing.read(DATASET))
    train, test, cut = split(examples, holdout)
    rows = train.count()
    if rows < MIN_ROWS:
        raise ValueError(f"{rows} readings to train on: at least {MIN_ROWS} are needed")
    model = fit(train)
    evaluation = evaluate(model, test)
    lo, hi = output_range(model, train)
    span = _ts_range(train)
    meters = train.select("meter_id").distinct().count()
    ctx.count(read=rows + evaluation["test_rows"])
    meta = training_meta(
        dataset=DATASET,
        data_range={"from_ts": span[0], "to_ts": span[1], "rows": rows, "meters": meters},
        evaluation=evaluation,
        output_range=[lo, hi],
        inputs=INPUTS,
        label=f"{LABEL}: the meter's next reading's kwh",
        holdout={"fraction": holdout, "from_ts": cut},
    )
    data = to_onnx(model)
    print(
        f"trained {name} on {rows} readings of {meters} meters; "
        f"held out {evaluation['test_rows']}: "
        f"mae {evaluation['mae']:.4f} (baseline {evaluation['baseline_mae']:.4f}), "
        f"rmse {evaluation['rmse']:.4f}; output range [{lo:.4f}, {hi:.4f}]"
    )
    if ctx.registry is not None:
        record = ctx.register(data, name, meta=meta)
        print(f"registered {record['name']} version {record['version']} ({record['sha256'][:12]})")
        return
    out = Path(ctx.params.get("out") or ctx.warehouse.path / "_models" / f"{name}.onnx")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_bytes(data)
    tmp.replace(out)
    meta_file = out.with_name(f"{out.name}.meta.json")
    meta_file.write_text(json.dumps(meta, sort_keys=True) + "\n")
    print(f"wrote {out} ({len(data)} bytes) and {meta_file.name}")


def features(meters: DataFrame) -> DataFrame:
    """Each reading with its meter's next reading's kwh (``LABEL``); the last one left out."""
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    by_meter = Window.partitionBy("meter_id").orderBy("seq")
    cols = [F.col(c).cast("double").alias(c) for c in INPUTS]
    return (
        meters.select("meter_id", "seq", "ts", *cols)
        .withColumn(LABEL, F.lead(F.col("kwh").cast("double")).over(by_meter))
        .where(F.col(LABEL).isNotNull())
    )


def split(examples: DataFrame, holdout: float) -> tuple[DataFrame, DataFrame, int]:
    """The rows before the latest ``holdout`` of the event time, those after, and the cut."""
    lo, hi = _ts_range(examples)
    cut = int(lo + (1.0 - holdout) * (hi - lo))
    return examples.where(examples.ts <= cut), examples.where(examples.ts > cut), cut


def fit(train: DataFrame) -> PipelineModel:
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.regression import DecisionTreeRegressor

    return Pipeline(
        stages=[
            VectorAssembler(inputCols=INPUTS, outputCol="features"),
            DecisionTreeRegressor(labelCol=LABEL, maxDepth=6, seed=1),
        ]
    ).fit(train)


def evaluate(model: PipelineModel, test: DataFrame) -> dict[str, Any]:
    """MAE and RMSE on the held-out rows, and the MAE of "the next is the same as now"."""
    from pyspark.sql import functions as F

    scored = model.transform(test)
    err = F.col("prediction") - F.col(LABEL)
    row = _first(
        scored.agg(
            F.count(F.lit(1)).alias("n"),
            F.avg(F.abs(err)).alias("mae"),
            F.sqrt(F.avg(err * err)).alias("rmse"),
            F.avg(F.abs(F.col("kwh") - F.col(LABEL))).alias("baseline_mae"),
        )
    )
    if not row["n"]:
        raise ValueError("no reading in the holdout: land more, or give a larger holdout")
    return {
        "test_rows": int(row["n"]),
        "mae": round(float(row["mae"]), 6),
        "rmse": round(float(row["rmse"]), 6),
        "baseline_mae": round(float(row["baseline_mae"]), 6),
    }


def output_range(model: PipelineModel, train: DataFrame) -> tuple[float, float]:
    """The predictions' [lo, hi] on the training rows (a rollout guard's reference)."""
    from pyspark.sql import functions as F

    row = _first(model.transform(train).agg(F.min("prediction"), F.max("prediction")))
    return float(row[0]), float(row[1])


def _ts_range(frame: DataFrame) -> tuple[int, int]:
    from pyspark.sql import functions as F

    row = _first(frame.agg(F.min("ts"), F.max("ts")))
    return int(row[0]), int(row[1])


def _first(frame: DataFrame) -> Row:
    """An aggregate's one row."""
    row = frame.first()
    assert row is not None  # an aggregate without grouping has exactly one row
    return row
