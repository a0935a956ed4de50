"""A heronpy bolt scoring with ``live_scorer``: the model its package ships, in
``initialize``, from the config heronpy hands it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import onnxruntime as ort
import pytest

from headwater.common.plan._package_models import MODELS_FILE, with_models
from headwater.common.runtime.instance import LABELS_ENV, TOPOLOGY_FILE_ENV
from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.spout.spout import Spout
from headwater.heronpy.api.stream import Grouping
from headwater.heronpy.api.topology import TopologyBuilder
from headwater.models import SCORE_CONFIG, ScoreSpec, live_scorer
from headwater.testing import run_main
from tests import _onnx_models

SPEC = ScoreSpec("vib", (1, 2, 3))
ROWS = [[float(i), 2.0 - i, 0.25 * i] for i in range(5)]
OUT: list[list[Any]] = []


class Readings(Spout):
    outputs: ClassVar[list[str]] = ["sensor", "a", "b", "c"]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.left = [[f"s{i}", *r] for i, r in enumerate(ROWS)]

    def next_tuple(self) -> None:
        if self.left:
            self.emit(self.left.pop(0))


class Score(Bolt):
    outputs: ClassVar[list[str]] = ["sensor", "a", "b", "c", "score", "version"]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.scorer = live_scorer(config, SPEC)

    def process(self, tup: Any) -> None:
        (score,) = self.scorer.run([tup.values[1:4]])
        self.emit([*tup.values, score, self.scorer.version])


class Collect(Bolt):
    def process(self, tup: Any) -> None:
        OUT.append(list(tup.values))


def test_a_heronpy_bolt_scores_with_live_scorer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(TOPOLOGY_FILE_ENV, str(tmp_path / "topo.py"))
    monkeypatch.setenv(LABELS_ENV, "{}")
    model = _onnx_models.linear()
    sha = hashlib.sha256(model).hexdigest()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / f"{sha}.onnx").write_bytes(model)
    entry = {"name": "vib", "kind": "onnx/1", "default": {"version": 2, "sha256": sha}}
    (tmp_path / MODELS_FILE).write_text(json.dumps({"score": entry}))
    builder = TopologyBuilder("heron-scoring")
    readings = builder.add_spout("readings", Readings, par=1)
    score = builder.add_bolt(
        "score",
        Score,
        par=1,
        inputs={readings: Grouping.SHUFFLE},
        config={SCORE_CONFIG: SPEC.doc()},
    )
    builder.add_bolt("collect", Collect, par=1, inputs={score: Grouping.SHUFFLE})
    OUT.clear()
    run_main(with_models(builder.__headwater_topology__(), tmp_path))
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    offline = session.run(None, {"features": np.asarray(ROWS, "float32")})[0].tolist()
    assert [
        [f"s{i}", *r, s[0], "2"] for i, (r, s) in enumerate(zip(ROWS, offline, strict=True))
    ] == OUT
