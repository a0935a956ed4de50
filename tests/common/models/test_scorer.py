"""``load_scorer``: an ONNX model scored a frame at a time, checked against its step at load.

Models built by hand (``tests/_onnx_models.py``) and exported from scikit-learn with
skl2onnx; every score is compared with onnxruntime run directly on the same inputs."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from skl2onnx import to_onnx
from sklearn.linear_model import LinearRegression, LogisticRegression

from headwater.common.models import ModelError, ScoreSpec
from headwater.common.models._scorer import load_scorer
from tests import _onnx_models

ROWS = [[1.0, 2.0, 3.0], [0.5, -1.5, 4.25], [-2.0, 0.0, 1.0]]


def _direct(
    data: bytes, rows: list[list[float]], dtype: str, output: str | None = None
) -> list[Any]:
    session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    name = session.get_inputs()[0].name
    outs = [output] if output else None
    return list(session.run(outs, {name: np.asarray(rows, dtype=dtype)})[0].tolist())


def test_a_hand_built_float_model_scores_a_frame_as_onnxruntime_does() -> None:
    data = _onnx_models.linear()
    scorer = load_scorer(data, ScoreSpec("m", ("a", "b", "c")))
    assert scorer.dtype == "float32"
    got = scorer.run(ROWS)
    assert got == [row[0] for row in _direct(data, ROWS, "float32")]  # [batch, 1] -> a number
    assert got == [4.5, 10.25, 1.0]
    assert scorer.run([]) == []


def test_a_double_model_shaped_batch_gives_a_number_per_row() -> None:
    data = _onnx_models.linear_double()
    scorer = load_scorer(data, ScoreSpec("m", 3))
    assert scorer.dtype == "float64"
    assert scorer.run(ROWS) == _direct(data, ROWS, "float64") == [4.5, 10.25, 1.0]


def test_scikit_learn_models_exported_with_skl2onnx_score_as_offline() -> None:
    rng = np.random.default_rng(7)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = x @ np.array([1.0, -2.0, 0.5, 3.0], dtype=np.float32) + 0.25
    reg = to_onnx(LinearRegression().fit(x, y), x[:1]).SerializeToString()
    rows = x[:10].tolist()
    scorer = load_scorer(reg, ScoreSpec("reg", 4))
    assert scorer.run(rows) == [r[0] for r in _direct(reg, rows, "float32")]
    clf = to_onnx(
        LogisticRegression().fit(x, y > 0), x[:1], options={"zipmap": False}
    ).SerializeToString()
    probs = load_scorer(clf, ScoreSpec("clf", 4, take="probabilities"))
    got = probs.run(rows)
    assert got == _direct(clf, rows, "float32", "probabilities")  # [batch, 2] -> lists of 2
    assert all(len(p) == 2 for p in got)
    labels = load_scorer(clf, ScoreSpec("clf", 4))  # the first output: the label, int64
    assert labels.run(rows) == _direct(clf, rows, "float32", "label")


def test_a_model_that_does_not_fit_the_step_is_refused_at_load_with_names_and_types() -> None:
    with pytest.raises(ModelError) as wrong_width:
        load_scorer(_onnx_models.linear(), ScoreSpec("vib", ("rms", "peak")))
    assert str(wrong_width.value) == (
        "model 'vib' input 'features' tensor(float)[batch, 3] takes 3 values per row; the "
        "step gives 2 (rms, peak)"
    )
    with pytest.raises(ModelError, match="takes a fixed batch of 1"):
        load_scorer(_onnx_models.fixed_batch(), ScoreSpec("vib", 3))
    with pytest.raises(ModelError, match=r"has no output 'proba'; its outputs: 'score'"):
        load_scorer(_onnx_models.linear(), ScoreSpec("vib", 3, take="proba"))
    with pytest.raises(ModelError, match="the model does not load in onnxruntime"):
        load_scorer(_onnx_models.unknown_op(), ScoreSpec("vib", 1))


def test_without_onnxruntime_the_load_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "onnxruntime", None)
    with pytest.raises(ModelError) as exc:
        load_scorer(_onnx_models.linear(), ScoreSpec("m", 3))
    assert str(exc.value) == (
        "scoring an ONNX model needs onnxruntime, which is not installed here: "
        "pip install 'headwater[onnx]'"
    )
