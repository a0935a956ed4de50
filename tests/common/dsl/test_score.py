"""``Streamlet.score`` and ``ScoreBolt``: records scored with the ONNX model a package ships.

Each test writes a package folder as a rollout makes it (``headwater_models.json`` and
``models/<sha256>.onnx`` beside the topology file) and points the process at it, as the
instance process is (``HEADWATER_TOPOLOGY_FILE``, ``HEADWATER_LABELS``)."""

from __future__ import annotations

import hashlib
import json
import re
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest

from headwater import Topology, shuffle
from headwater.common._exceptions import HeadwaterError, InvalidTopologyError
from headwater.common.models import SCORE_CONFIG
from headwater.common.models._scorer import Scorer
from headwater.common.plan._package_models import MODEL_CONFIG, MODELS_FILE, with_models
from headwater.common.runtime.instance import LABELS_ENV, TOPOLOGY_FILE_ENV
from headwater.dsl import Pipeline
from headwater.models import ScoreBolt
from headwater.testing import LocalRun, TestContext, TestSink, TestSource, run_main
from tests import _onnx_models

GOOD = [{"id": i, "a": float(i), "b": 2.0 * i, "c": 0.5 - i} for i in range(6)]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(TOPOLOGY_FILE_ENV, str(tmp_path / "topo.py"))
    monkeypatch.setenv(LABELS_ENV, '{"site": "a"}')
    return tmp_path


def _ship(folder: Path, component: str, data: bytes, version: int = 3, **extra: Any) -> None:
    """``data`` as ``component``'s model in the package ``folder``, as a rollout writes it."""
    sha = hashlib.sha256(data).hexdigest()
    (folder / "models").mkdir(exist_ok=True)
    (folder / "models" / f"{sha}.onnx").write_bytes(data)
    entry = {"name": "vib", "kind": "onnx/1", "default": {"version": version, "sha256": sha}}
    (folder / MODELS_FILE).write_text(json.dumps({component: {**entry, **extra}}))


def _direct(rows: list[list[float]]) -> list[float]:
    session = ort.InferenceSession(_onnx_models.linear(), providers=["CPUExecutionProvider"])
    got = session.run(None, {"features": np.asarray(rows, "float32")})[0].tolist()
    return [r[0] for r in got]


def _pipeline(records: list[Any], out: list[Any], **kw: Any) -> Topology:
    p = Pipeline("scoring")
    kw.setdefault("inputs", ("a", "b", "c"))
    p.from_collection("readings", records).score("vib", "vib", **kw).sink("out", out.append)
    return p.build()


def test_a_pipeline_scores_with_the_packaged_model_and_stamps_its_version(package: Path) -> None:
    _ship(package, "vib", _onnx_models.linear())
    bad = [{"id": 90, "a": 1.0, "b": 2.0}, {"id": 91, "a": "x", "b": 1, "c": 2}]
    bad += [{"id": 92, "a": float("nan"), "b": 1, "c": 2}, {"id": 93, "a": True, "b": 1, "c": 2}]
    out: list[Any] = []
    topology = with_models(_pipeline([*GOOD[:3], *bad, *GOOD[3:]], out), package)
    assert json.loads(topology.component("vib").config[SCORE_CONFIG]) == {
        "inputs": ["a", "b", "c"],
        "model": "vib",
        "output": "score",
        "take": None,
    }
    assert MODEL_CONFIG in topology.component("vib").config
    run = run_main(topology)
    expected = _direct([[r["a"], r["b"], r["c"]] for r in GOOD])
    assert out == [
        {**r, "score": s, "model_version": "3"} for r, s in zip(GOOD, expected, strict=True)
    ]
    ctx = run.context("vib")
    assert [(d[0], d[1], d[3]["id"]) for d in ctx.dead_letters] == [  # the records as sent
        ("vib", "score 'vib': the record has no input 'c'", 90),
        ("vib", "score 'vib': input 'a' is str 'x', not a number", 91),
        ("vib", "score 'vib': input 'a' is nan, not a finite number", 92),
        ("vib", "score 'vib': input 'a' is bool True, not a number", 93),
    ]
    assert ctx.counters["scored"] == 6 and "unscored" not in ctx.counters
    assert ctx.counters["score_us"] > 0


def test_a_frame_is_scored_in_one_model_run(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _ship(package, "vib", _onnx_models.linear(), range=[0.0, 5.0])
    topology = with_models(_pipeline([], []), package)
    runs: list[int] = []
    real = Scorer.run

    def counted(self: Scorer, rows: Any) -> list[Any]:
        runs.append(len(rows))
        return real(self, rows)

    monkeypatch.setattr(Scorer, "run", counted)
    bolt = topology.component("vib").factory()
    ctx = TestContext(topology, "vib")
    bolt.open(ctx)
    entries = [["k", r] for r in GOOD] + [["k", {"a": 1}]]
    bolt.process_values("readings", "default", 1, entries)
    assert runs == [6]  # one run for the frame's six readable records
    assert len(ctx.dead_letters) == 1
    scores = _direct([[r["a"], r["b"], r["c"]] for r in GOOD])
    assert ctx.counters["scored"] == 6
    assert ctx.counters["out_of_range"] == sum(1 for s in scores if not 0.0 <= s <= 5.0) > 0


def test_with_no_model_rolled_out_records_pass_unscored(package: Path) -> None:
    out: list[Any] = []
    run = run_main(_pipeline(GOOD, out))  # no models file: nothing rolled out yet
    assert out == [{**r, "score": None, "model_version": ""} for r in GOOD]
    assert run.context("vib").counters == {"unscored": 6, "records:out": 6}
    _ship(package, "vib", _onnx_models.linear())  # a canary for site b only: not this agent
    entry = json.loads((package / MODELS_FILE).read_text())["vib"]
    canary = {**entry["default"], "selector": {"site": "b"}}
    (package / MODELS_FILE).write_text(
        json.dumps({"vib": {**entry, "default": None, "canary": canary}})
    )
    out.clear()
    run_main(with_models(_pipeline(GOOD[:2], out), package))
    assert [r["model_version"] for r in out] == ["", ""]


def test_a_model_that_does_not_fit_the_step_fails_the_component_at_open(package: Path) -> None:
    _ship(package, "vib", _onnx_models.linear())
    topology = with_models(_pipeline(GOOD, [], inputs=("a", "b")), package)
    with pytest.raises(HeadwaterError) as exc:
        LocalRun(topology).open()
    assert str(exc.value) == (
        "model 'vib' version 3: model 'vib' input 'features' tensor(float)[batch, 3] takes 3 "
        "values per row; the step gives 2 (a, b)"
    )
    _ship(package, "vib", _onnx_models.linear(), kind="gated-linear/1")
    with pytest.raises(HeadwaterError, match="is of kind 'gated-linear/1'; a scoring step"):
        LocalRun(with_models(_pipeline(GOOD, []), package)).open()


def test_list_records_function_inputs_and_outputs(package: Path) -> None:
    _ship(package, "vib", _onnx_models.linear())
    rows = [[r["a"], r["b"], r["c"]] for r in GOOD]
    out: list[Any] = []
    run_main(with_models(_pipeline([("x", *r) for r in rows], out, inputs=(1, 2, 3)), package))
    scores = _direct(rows)
    # the records crossed the wire to the scoring component as lists: both appended
    assert out == [["x", *r, s, "3"] for r, s in zip(rows, scores, strict=True)]
    out.clear()
    run_main(
        with_models(
            _pipeline(
                GOOD,
                out,
                inputs=lambda r: (r["a"], r["b"], r["c"]),
                width=3,
                output=lambda r, s, v: (r["id"], round(s, 3), v),
            ),
            package,
        )
    )
    # the sink runs in the scoring step's component: the output function's value as it is
    assert out == [(r["id"], round(s, 3), "3") for r, s in zip(GOOD, scores, strict=True)]


def test_a_declaration_that_cannot_be_made_is_refused_when_the_pipeline_is_built() -> None:
    with pytest.raises(InvalidTopologyError, match="inputs given as a function need width=N"):
        _pipeline([], [], inputs=lambda r: (r["a"],))
    with pytest.raises(InvalidTopologyError, match="a list of a dict record's keys"):
        _pipeline([], [], inputs=("a", 1))
    # a careless call: one field as a bare string (not three fields 'a', 'b', 'c'), no
    # inputs, a model that is no model name, an output or take that is no name
    said: dict[str, dict[str, Any]] = {
        "inputs=['abc'] for one field": {"inputs": "abc"},
        "inputs is a list of keys or indexes, or a function, not None": {"inputs": None},
        "'<x>' is not a model name": {"model": "<x>"},
        "model is a name (a string), not None": {"model": None},
        "output is a field name or a function, not 5": {"output": 5},
        "take is the name of a model output, not 5": {"take": 5},
        "width='3' but 3 inputs are named": {"width": "3"},
    }
    with pytest.raises(InvalidTopologyError, match="version_field is a field name, not 5"):
        _pipeline([], [], version_field=5)
    with pytest.raises(InvalidTopologyError, match="the version would overwrite the score"):
        _pipeline([], [], output="v", version_field="v")
    for says, kw in said.items():
        args: dict[str, Any] = {"model": "vib", "inputs": ("a", "b", "c"), **kw}
        with pytest.raises(InvalidTopologyError, match=re.escape(says)):
            Pipeline("scoring").from_collection("readings", []).score("vib", **args)
        with pytest.raises(HeadwaterError, match=re.escape(says)):
            ScoreBolt(**args)


def test_a_score_bolt_scores_plain_tuples(package: Path) -> None:
    _ship(package, "score", _onnx_models.linear())
    rows = [[float(i), 1.0, -float(i)] for i in range(4)]
    out: list[Any] = []
    t = (
        Topology("plain")
        .add_spout(
            "src",
            partial(TestSource, [[f"s{i}", *r] for i, r in enumerate(rows)]),
            outputs=("sensor", "a", "b", "c"),
        )
        .add_bolt(
            "score",
            partial(ScoreBolt, "vib", (1, 2, 3)),
            inputs={"src": shuffle()},
            outputs=("sensor", "a", "b", "c", "score", "version"),
            config=ScoreBolt.config("vib", (1, 2, 3)),
        )
        .add_bolt("sink", partial(TestSink, out), inputs={"score": shuffle()})
    )
    run = run_main(with_models(t, package))
    scores = _direct(rows)
    assert out == [[f"s{i}", *r, scores[i], "3"] for i, r in enumerate(rows)]
    assert run.context("score").counters["scored"] == 4
    bare = Topology("bare").add_spout("src", partial(TestSource, []), outputs=("a",))
    bare = bare.add_bolt("score", partial(ScoreBolt, "vib", (0,)), inputs={"src": shuffle()})
    with pytest.raises(HeadwaterError, match="needs its declaration in its config"):
        LocalRun(bare).open()


def test_a_record_the_model_raises_on_is_dead_lettered_and_the_frame_goes_on(
    package: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _ship(package, "vib", _onnx_models.linear())
    out: list[Any] = []
    topology = with_models(_pipeline([], out), package)
    real = Scorer.run

    def picky(self: Scorer, rows: Any) -> list[Any]:
        if any(r[0] == 999.0 for r in rows):
            raise RuntimeError("a row it cannot take")
        return real(self, rows)

    monkeypatch.setattr(Scorer, "run", picky)
    bolt = topology.component("vib").factory()
    ctx = TestContext(topology, "vib")
    bolt.open(ctx)
    poison = {"id": 99, "a": 999.0, "b": 0.0, "c": 0.0}
    huge = {"id": 98, "a": 10**400, "b": 0.0, "c": 0.0}  # an int no float holds
    wide = {"id": 97, "a": 1e300, "b": 0.0, "c": 0.0}  # a double no float32 holds
    records = [*GOOD[:2], poison, huge, wide, *GOOD[2:]]
    bolt.process_values("readings", "default", 1, [["k", r] for r in records])
    assert [r["id"] for r in out] == [r["id"] for r in GOOD]
    assert [(d[1], d[3]["id"]) for d in ctx.dead_letters] == [
        (
            "score 'vib': input 'a' is 1000000000000000000000000000000000000..., too large for "
            "a float",
            98,
        ),
        ("score 'vib': the model raised on this record: a row it cannot take", 99),
        (
            "score 'vib': the model raised on this record: an input is beyond the range of "
            "the model's float32 input (±3.4e+38)",
            97,
        ),
    ]
    assert ctx.counters["scored"] == 6
