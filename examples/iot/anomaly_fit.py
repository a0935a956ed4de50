"""The IoT example's anomaly model's robust per-group fits: MLlib regressions, robust spreads.

Every fit here is per *group* (a sensor, or ``DEFAULT``: all sensors pooled,
for the sensors a model never saw), all groups at once: rows carry their
group's index ``gi``; its one-hot vector (``OneHotEncoder``) times ``[1, x]``
(``Interaction``) gives each group its own intercept and slope in one
``LinearRegression`` without an intercept of its own (the normal equations
are block-diagonal: the same answer as one regression per group, in one pass
over the data).

Robust: the history holds the very anomalies the model is to find, and a
least-squares fit leans towards them. So each regression is fitted, the rows
whose residual is more than ``TRIM`` robust sigmas from the group's median
residual are dropped, and it is fitted again; its threshold is ``K`` robust
sigmas of the refit's residuals around their median (which joins the
intercept; sigma = 1.4826 x the median absolute deviation, which spikes barely
move).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

DEFAULT = ""  # the pooled group's key (a sensor's name is never empty)
MAD_SIGMA = 1.4826  # median absolute deviation -> standard deviation, for normal noise
TRIM = 3.0  # residuals dropped before the refit, in robust sigmas
K = 4.0  # a reading is anomalous this many robust sigmas away from its prediction
K_GATE = 3.0  # the previous reading is an outlier this far from its smoothed level
MIN_SIGMA = 1e-6  # a constant signal still gets a threshold above rounding noise
ACCURACY = 100_000  # percentile_approx's accuracy (relative error 1e-5)
NORMAL_MAX = 4096  # LinearRegression's normal solver takes at most this many features
LINES = {"next": "prev_value", "fallback": "prev_smoothed"}  # regression -> its feature


def spreads(df: DataFrame, cols: dict[str, Column]) -> dict[str, dict[str, tuple[float, float]]]:
    """Per group, per name: (median of the column, robust sigma), in two aggregations."""
    from pyspark.sql import functions as F

    x = df.select("group", *(c.alias(n) for n, c in cols.items()))
    med = x.groupBy("group").agg(
        *(F.percentile_approx(n, 0.5, ACCURACY).alias(f"{n}_med") for n in cols)
    )
    dev = (
        x.join(med, "group")
        .groupBy("group")
        .agg(
            *(F.first(f"{n}_med").alias(f"{n}_med") for n in cols),
            *(
                F.percentile_approx(F.abs(F.col(n) - F.col(f"{n}_med")), 0.5, ACCURACY).alias(
                    f"{n}_mad"
                )
                for n in cols
            ),
        )
    )
    out: dict[str, dict[str, tuple[float, float]]] = {}
    for r in dev.collect():
        out[r["group"]] = {
            n: (float(r[f"{n}_med"]), max(MAD_SIGMA * float(r[f"{n}_mad"]), MIN_SIGMA))
            for n in cols
            if r[f"{n}_med"] is not None
        }
    return out


def fit(df: DataFrame, groups: list[str]) -> dict[str, dict[str, dict[str, float]]]:
    """Per group: ``level``, ``gate``, ``next`` and ``fallback`` (see ``headwater.models``).

    ``df``: the training rows, each under its group (``group``, its index ``gi``),
    with ``value``, ``prev_value`` and ``prev_smoothed`` (null for a sensor's first).
    """
    from pyspark.ml.feature import Interaction, OneHotEncoder, VectorAssembler
    from pyspark.ml.regression import LinearRegression
    from pyspark.sql import functions as F

    spark = df.sparkSession
    index = spark.createDataFrame([(float(i),) for i in range(len(groups))], "gi double")
    onehot = OneHotEncoder(inputCol="gi", outputCol="_oh", dropLast=False).fit(index)
    stats = spreads(
        df, {"level": F.col("value"), "gate": F.col("prev_value") - F.col("prev_smoothed")}
    )
    data: Any = onehot.transform(df.where(F.col("prev_value").isNotNull()))
    data = data.withColumn("_one", F.lit(1.0))
    for name, x in LINES.items():
        data = VectorAssembler(inputCols=["_one", x], outputCol=f"_{name}_x").transform(data)
        data = Interaction(inputCols=["_oh", f"_{name}_x"], outputCol=f"{name}_f").transform(data)
    data = data.select("group", "value", *LINES.values(), *(f"{n}_f" for n in LINES)).cache()
    try:

        def regress(kept: DataFrame | None) -> dict[str, Any]:
            models = {}
            for name in LINES:
                rows = data if kept is None else kept.where(F.col(f"{name}_keep"))
                lr = LinearRegression(
                    featuresCol=f"{name}_f",
                    labelCol="value",
                    predictionCol=f"{name}_p",
                    fitIntercept=False,
                    regParam=0.0,
                    standardization=False,
                    solver="normal" if 2 * len(groups) <= NORMAL_MAX else "l-bfgs",
                )
                models[name] = lr.fit(rows)
            return models

        def residuals(models: dict[str, Any]) -> tuple[DataFrame, dict[str, Column]]:
            scored = data
            for m in models.values():
                scored = m.transform(scored)
            return scored, {n: F.col("value") - F.col(f"{n}_p") for n in LINES}

        first = regress(None)
        scored, res = residuals(first)
        spread = spreads(scored, res)
        bounds = spark.createDataFrame(
            [(g, *(v for n in LINES for v in s[n])) for g, s in spread.items()],
            "group string, " + ", ".join(f"{n}_c double, {n}_s double" for n in LINES),
        )
        kept = scored.join(bounds, "group").select(
            *data.columns,
            *(
                (F.abs(res[n] - F.col(f"{n}_c")) <= TRIM * F.col(f"{n}_s")).alias(f"{n}_keep")
                for n in LINES
            ),
        )
        final = regress(kept)
        scored, res = residuals(final)
        spread = spreads(scored, res)
    finally:
        data.unpersist()
    coef = {n: m.coefficients.toArray().tolist() for n, m in final.items()}
    out = {}
    for i, g in enumerate(groups):
        lv, gate = stats[g]["level"], stats[g]["gate"]
        p: dict[str, dict[str, float]] = {
            "level": {"center": lv[0], "threshold": K * lv[1]},
            "gate": {"center": gate[0], "threshold": K_GATE * gate[1]},
        }
        for n in LINES:
            center, sigma = spread[g][n]
            p[n] = {
                # the median residual joins the intercept: the threshold is around the prediction
                "intercept": float(coef[n][2 * i]) + center,
                "slope": float(coef[n][2 * i + 1]),
                "threshold": K * sigma,
            }
        out[g] = p
    return out
