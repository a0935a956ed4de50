"""``headwater run`` of a DSL pipeline with a ``score`` step, from a package that ships an
ONNX model as a rollout writes it (``headwater_models.json``, ``models/<sha256>.onnx``):
every readable record comes out once, scored as onnxruntime scores it offline, with the
model version; the unreadable one is dead-lettered, and the counters say so."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from tests import _onnx_models

from ._support import running, wait_for

pytestmark = pytest.mark.cluster
N = 300

TOPOLOGY = """
import json
import os

from headwater.dsl import Pipeline

OUT = os.environ["SCORE_OUT"]


def write(record):
    with open(os.path.join(OUT, f"out-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps(record) + "\\n")


records = [{"id": i, "a": i / 10, "b": 1.0 - i / 7, "c": (i % 13) / 3} for i in range(N)]
records.insert(50, {"id": -1, "a": "not a number", "b": 1.0, "c": 2.0})
p = Pipeline("scored")
(
    p.from_collection("readings", records)
    .score("vib", "vibration", inputs=("a", "b", "c"))
    .sink("out", write)
)
topology = p.build()
""".replace("range(N)", f"range({N})")


def _rows(out: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for f in sorted(out.glob("out-*.jsonl")):
        rows.extend(json.loads(line) for line in f.read_text().split("\n")[:-1])
    return rows


def test_a_pipeline_scores_with_the_model_its_package_ships(tmp_path: Path) -> None:
    pkg, out = tmp_path / "pkg", tmp_path / "out"
    (pkg / "models").mkdir(parents=True)
    out.mkdir()
    model = _onnx_models.linear()
    sha = hashlib.sha256(model).hexdigest()
    (pkg / "models" / f"{sha}.onnx").write_bytes(model)
    entry = {"name": "vibration", "kind": "onnx/1", "default": {"version": 4, "sha256": sha}}
    (pkg / "headwater_models.json").write_text(json.dumps({"vib": entry}))
    (pkg / "topo.py").write_text(TOPOLOGY)
    with running(pkg / "topo.py", containers=1, env={"SCORE_OUT": str(out)}) as cluster:
        wait_for(lambda: len(_rows(out)) >= N, 60, f"{N} scored records")

        def counters() -> dict[str, float] | None:
            tasks = cluster.metrics()["tasks"].values()
            vib = [m for m in tasks if m.get("component") == "vib"]
            return vib[0] if vib and vib[0].get("user:scored") == N else None

        metrics = wait_for(counters, 30, "the scoring counters")
    rows = _rows(out)
    assert sorted(r["id"] for r in rows) == list(range(N))  # each once, the bad one not
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    features = np.asarray([[r["a"], r["b"], r["c"]] for r in rows], "float32")
    offline = [s[0] for s in session.run(None, {"features": features})[0].tolist()]
    assert [r["score"] for r in rows] == pytest.approx(offline, rel=1e-6, abs=1e-6)
    assert {r["model_version"] for r in rows} == {"4"}
    assert metrics["dead_letters"] == 1
    assert metrics["user:score_us"] > 0 and "user:unscored" not in metrics
