"""The energy example's model job (``examples/energy/energy_model.py``) with real PySpark over a
landing its own topology wrote: the ONNX file it writes scores, in onnxruntime, the next
interval's energy of every held-out reading better than "the same as now", its metadata is
exact against the landing, and with a real master it registers the model (the version's
record carries the graph's input and the metadata)."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from headwater._master_client import Client
from headwater.models import (
    INPUT,
    MAX_META_BYTES,
    SCORE_CONFIG,
    Registry,
    ScoreBolt,
    ScoreSpec,
    load_scorer,
)
from headwater.spark import JobContext
from tests.cloud.test_rest_auth import master  # noqa: F401  (the fixture)

from ..._workers import one_worker
from ._energy import COUNT, DATA, ENERGY, METERS, SITES, Landing, _module
from ._spark import GATEWAY_SOCKET, spark_fixture

pytestmark = [pytest.mark.timeout(600), GATEWAY_SOCKET, one_worker(__name__)]

spark = spark_fixture("headwater-test-energy-model", "module")
sys.path.insert(0, str(ENERGY))  # the job imports its neighbour energy_io, as `spark run` lets it
JOB = _module("energy_model")
IO = _module("energy_io")
sys.path.remove(str(ENERGY))
PREDICT = ScoreBolt.config(IO.MODEL, [IO.METERS.index(c) for c in IO.MODEL_INPUTS])


def _landed(tmp_path: Path) -> Path:
    landing = Landing(tmp_path / "out")
    landing.land(list(DATA.messages(SITES, METERS, COUNT)))
    return landing.root


def _examples() -> list[tuple[int, float, float, float]]:
    """(ts, kwh, voltage, the meter's next kwh) of every reading that has a next one."""
    out = []
    rows = DATA.meters_rows(SITES, METERS, COUNT)
    by_meter: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_meter.setdefault(r["meter_id"], []).append(r)
    for readings in by_meter.values():
        readings.sort(key=lambda r: r["seq"])
        for a, b in itertools.pairwise(readings):
            out.append((a["ts"], a["kwh"], a["voltage"], b["kwh"]))
    return out


def _context(spark: Any, tmp_path: Path, registry: Registry | None = None) -> JobContext:
    return JobContext(
        spark,
        name="energy_model",
        landing=_landed(tmp_path),
        warehouse=tmp_path / "wh",
        checkpoint=tmp_path / "ck",
        registry=registry,
    )


def test_the_job_writes_an_onnx_model_that_beats_the_baseline(spark: Any, tmp_path: Path) -> None:
    ctx = _context(spark, tmp_path)
    JOB.run(spark, ctx)
    out = tmp_path / "wh" / "_models" / "energy-next-kwh.onnx"
    meta = json.loads(out.with_name(out.name + ".meta.json").read_text())
    assert len(json.dumps(meta, separators=(",", ":"))) <= MAX_META_BYTES

    examples = _examples()
    lo, hi = min(e[0] for e in examples), max(e[0] for e in examples)
    cut = int(lo + 0.75 * (hi - lo))
    train = [e for e in examples if e[0] <= cut]
    test = [e for e in examples if e[0] > cut]
    assert meta["dataset"] == "meters" and meta["inputs"] == ["kwh", "voltage"]
    assert meta["holdout"] == {"fraction": 0.25, "from_ts": cut}
    assert meta["data_range"] == {
        "from_ts": lo,
        "to_ts": max(e[0] for e in train),
        "rows": len(train),
        "meters": SITES * METERS,
    }
    assert meta["evaluation"]["test_rows"] == len(test)

    session = ort.InferenceSession(out.read_bytes(), providers=["CPUExecutionProvider"])
    assert [(i.name, i.shape[1]) for i in session.get_inputs()] == [(INPUT, 2)]
    assert [o.name for o in session.get_outputs()] == ["prediction"]

    def score(rows: list[tuple[int, float, float, float]]) -> np.ndarray:
        x = np.array([[kwh, v] for _, kwh, v, _ in rows], dtype=np.float32)
        return np.asarray(session.run(None, {INPUT: x})[0]).ravel()

    trained = score(train)  # the output range is the model's own on its training rows
    np.testing.assert_allclose(meta["output_range"], [trained.min(), trained.max()], atol=1e-5)
    got = score(test)
    want = np.array([e[3] for e in test])
    mae = float(np.abs(got - want).mean())
    baseline = float(np.abs(np.array([e[1] for e in test]) - want).mean())
    assert meta["evaluation"]["mae"] == pytest.approx(mae, abs=1e-5)
    assert meta["evaluation"]["baseline_mae"] == pytest.approx(baseline, abs=1e-6)
    assert mae < baseline / 4

    # the edge's own scorer takes it as the pipeline's predict step declares it
    spec = ScoreSpec.parse(PREDICT[SCORE_CONFIG])
    assert spec.model == JOB.MODEL and spec.width == len(JOB.INPUTS)
    scorer = load_scorer(out.read_bytes(), spec)
    rows = [[kwh, v] for _, kwh, v, _ in test]
    np.testing.assert_allclose(scorer.run(rows), got, rtol=1e-6)


def test_the_job_registers_its_model_with_a_real_master(
    spark: Any,
    tmp_path: Path,
    master: dict[str, Any],  # noqa: F811
) -> None:
    admin = (master["state"] / "admin.token").read_text().strip()
    ctx = _context(spark, tmp_path, Registry(master["http"], admin))
    JOB.run(spark, ctx)
    assert not (tmp_path / "wh" / "_models").exists()  # registered, not written
    ctx = _context(spark, tmp_path / "again", Registry(master["http"], admin))
    JOB.run(spark, ctx)
    # the registry's record of version 2: the graph's input and the job's metadata
    got = Client(master["http"], admin).call("GET", "/api/v1/models/energy-next-kwh/2")
    assert (got["name"], got["version"], got["kind"]) == ("energy-next-kwh", 2, "onnx/1")
    assert [(i["name"], i["type"]) for i in got["inputs"]] == [(INPUT, "tensor(float)")]
    assert got["metadata"]["dataset"] == "meters"
    assert got["metadata"]["inputs"] == ["kwh", "voltage"]
    assert got["metadata"]["evaluation"]["mae"] < got["metadata"]["evaluation"]["baseline_mae"]


def test_the_job_file_is_the_examples() -> None:
    assert Path(str(JOB.__file__)) == ENERGY / "energy_model.py"
