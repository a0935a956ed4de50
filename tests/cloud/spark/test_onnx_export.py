"""``headwater.models.to_onnx``: a fitted scikit-learn or Spark MLlib model exported to ONNX
scores, in onnxruntime, what the model itself predicts on the same rows (to float32's
tolerance), through one float input ``input`` of shape ``[None, n]``; a model the
converters do not know is refused with its name.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from headwater.models import INPUT, ExportError, ScoreSpec, load_scorer, to_onnx

from ..._workers import one_worker
from ._spark import GATEWAY_SOCKET, spark_session

pytestmark = [pytest.mark.timeout(300), GATEWAY_SOCKET, one_worker(__name__)]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A local session whose Python daemon starts before any test (a tree's conversion runs
    Python tasks) and whose Python workers end with their task, so that no test sees them
    as processes it started and left."""
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.regression import DecisionTreeRegressor

    with spark_session("headwater-test-onnx-export", {"spark.python.worker.reuse": "false"}) as s:
        df = VectorAssembler(inputCols=["a", "b", "c"], outputCol="features").transform(_frame(s))
        to_onnx(DecisionTreeRegressor(labelCol="y", maxDepth=2).fit(df))
        yield s


RNG = np.random.default_rng(7)
X = RNG.normal(size=(120, 3))
Y = X @ np.array([1.5, -2.0, 0.5]) + 0.25 + RNG.normal(scale=0.1, size=120)
LABEL = (Y > 0.25).astype(int)


def _session(data: bytes) -> ort.InferenceSession:
    s = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    (inp,) = s.get_inputs()
    assert (inp.name, inp.type, inp.shape[1]) == (INPUT, "tensor(float)", 3)
    return s


def _scores(data: bytes, x: np.ndarray) -> dict[str, np.ndarray]:
    s = _session(data)
    got = s.run(None, {INPUT: x.astype(np.float32)})
    return {o.name: v for o, v in zip(s.get_outputs(), got, strict=True)}


def test_sklearn_regression_and_classifier_score_as_the_model() -> None:
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LinearRegression, LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    reg = make_pipeline(StandardScaler(), LinearRegression()).fit(X, Y)
    (pred,) = _scores(to_onnx(reg), X).values()
    np.testing.assert_allclose(pred.ravel(), reg.predict(X), rtol=1e-4, atol=1e-4)
    # and through the edge's scorer, as a score step of three inputs runs it
    scorer = load_scorer(to_onnx(reg), ScoreSpec("reg", ("a", "b", "c")))
    np.testing.assert_allclose(scorer.run(X.tolist()), reg.predict(X), rtol=1e-4, atol=1e-4)

    for clf in (
        LogisticRegression().fit(X, LABEL),
        RandomForestClassifier(5, random_state=1).fit(X, LABEL),
    ):
        out = _scores(to_onnx(clf), X)
        assert sorted(out) == ["label", "probabilities"]  # numeric tensors: zipmap=False
        np.testing.assert_array_equal(out["label"], clf.predict(X))
        np.testing.assert_allclose(out["probabilities"], clf.predict_proba(X), atol=1e-5)


def test_refusals_say_what_to_do() -> None:
    from sklearn.linear_model import LinearRegression

    with pytest.raises(ExportError, match="is it fitted"):
        to_onnx(LinearRegression())
    with pytest.raises(ExportError, match="give a fitted scikit-learn estimator"):
        to_onnx(object())
    fitted = LinearRegression().fit([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0]], [0.0, 1.0])
    with pytest.raises(ExportError, match=r"n_features=5 but the LinearRegression takes 3 fea"):
        to_onnx(fitted, n_features=5)  # would declare [None, 5] over 3 coefficients
    with pytest.raises(ExportError, match=r"n_features is a number of features .* not -1"):
        to_onnx(LinearRegression(), n_features=-1)
    assert to_onnx(fitted, n_features=3)  # the width it was fitted on: as if not given


def _frame(spark: Any) -> Any:
    rows = [(*map(float, x), float(y), float(c)) for x, y, c in zip(X, Y, LABEL, strict=True)]
    return spark.createDataFrame(rows, ["a", "b", "c", "y", "label"])


def test_mllib_pipelines_score_as_the_model(spark: Any) -> None:
    from pyspark.ml import Pipeline
    from pyspark.ml.classification import LogisticRegression, RandomForestClassifier
    from pyspark.ml.feature import StandardScaler, VectorAssembler
    from pyspark.ml.regression import (
        DecisionTreeRegressor,
        LinearRegression,
        RandomForestRegressor,
    )

    df = _frame(spark)
    assemble = VectorAssembler(inputCols=["a", "b", "c"], outputCol="features")
    x = np.array([[r.a, r.b, r.c] for r in df.collect()])
    for est in (
        LinearRegression(labelCol="y"),
        DecisionTreeRegressor(labelCol="y", maxDepth=4),
        LogisticRegression(labelCol="label"),
        RandomForestClassifier(labelCol="label", numTrees=3, seed=1),
    ):
        model = Pipeline(stages=[assemble, est]).fit(df)
        rows = model.transform(df).collect()
        out = _scores(to_onnx(model), x)
        want = np.array([r.prediction for r in rows])
        np.testing.assert_allclose(out["prediction"].ravel(), want, rtol=1e-4, atol=1e-4)
        if "probability" in out:
            prob = np.array([list(r.probability) for r in rows])
            np.testing.assert_allclose(out["probability"], prob, atol=1e-5)
        # the bare model: its features vector is the input
        bare = _scores(to_onnx(model.stages[-1]), x)
        np.testing.assert_allclose(bare["prediction"].ravel(), want, rtol=1e-4, atol=1e-4)

    # more stages: a scaler between the assembler and a forest
    scale = StandardScaler(inputCol="features", outputCol="scaled")
    forest = RandomForestRegressor(labelCol="y", featuresCol="scaled", numTrees=4, seed=1)
    model = Pipeline(stages=[assemble, scale, forest]).fit(df)
    want = np.array([r.prediction for r in model.transform(df).collect()])
    got = _scores(to_onnx(model), x)["prediction"].ravel()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)


def test_an_unsupported_spark_stage_is_named(spark: Any) -> None:
    from pyspark.ml import PipelineModel
    from pyspark.ml.feature import SQLTransformer, VectorAssembler

    model = PipelineModel(
        [
            VectorAssembler(inputCols=["a", "b", "c"], outputCol="features"),
            SQLTransformer(statement="SELECT * FROM __THIS__"),
        ]
    )
    with pytest.raises(
        ExportError,
        match=r"cannot convert a Spark SQLTransformer stage; it converts: .*LinearRegressionModel",
    ):
        to_onnx(model)


def test_a_missing_converter_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from sklearn.linear_model import LinearRegression

    monkeypatch.setitem(sys.modules, "skl2onnx", None)  # as if not installed
    with pytest.raises(ExportError, match=r"needs skl2onnx .*pip install 'headwater\[train\]'"):
        to_onnx(LinearRegression().fit(X, Y))


def test_a_sklearn_pipeline_classifier_has_numeric_outputs() -> None:
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, LABEL)
    out = _scores(to_onnx(clf), X)
    np.testing.assert_array_equal(out["label"], clf.predict(X))
    np.testing.assert_allclose(out["probabilities"], clf.predict_proba(X), atol=1e-5)


def test_a_stage_the_converter_gets_wrong_is_refused(spark: Any) -> None:
    """onnxmltools' GBT regression graph scores otherwise than Spark: refused, not shipped."""
    from pyspark.ml import Pipeline
    from pyspark.ml.feature import VectorAssembler
    from pyspark.ml.regression import GBTRegressor

    df = _frame(spark)
    assemble = VectorAssembler(inputCols=["a", "b", "c"], outputCol="features")
    model = Pipeline(stages=[assemble, GBTRegressor(labelCol="y", maxIter=2)]).fit(df)
    with pytest.raises(ExportError, match="GBTRegressionModel stage: onnxmltools' converter"):
        to_onnx(model)
