"""common/models: the artifact's validation (it comes from the network) and the scorer."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from headwater.common import models
from headwater.common._exceptions import HeadwaterError
from headwater.common.models import (
    AnomalyModel,
    ModelError,
    dump_model,
    load_model,
    sha256,
)


def _p(level: float = 20.0) -> dict[str, Any]:
    return {
        "level": {"center": level, "threshold": 14.0},
        "gate": {"center": 0.0, "threshold": 7.5},
        "next": {"intercept": 0.2, "slope": 0.99, "threshold": 3.0},
        "fallback": {"intercept": 1.5, "slope": 0.9, "threshold": 12.0},
    }


FIGURES = {
    "rows": 10,
    "tp": 1,
    "fp": 0,
    "fn": 1,
    "tn": 8,
    "precision": 1.0,
    "recall": 0.5,
    "f1": 2 / 3,
}


def doc() -> dict[str, Any]:
    return {
        "format": "headwater-model/1",
        "name": "iot-anomaly",
        "kind": "gated-linear/1",
        "params": {"default": _p(), "sensors": {"s0-0": _p(18.0), "s1-0": _p(22.0)}},
        "trained": {"from_ts": 1000, "to_ts": 9000, "rows": 30, "sensors": 2},
        "evaluation": {
            "holdout": 0.25,
            "split": "latest quarter",
            "labels": "m:f",
            "test_rows": 10,
            "model": dict(FIGURES),
            "handset": {**FIGURES, "precision": None, "f1": None},
        },
        "created_at": 1_700_000_000.5,
    }


def test_exports_are_pinned() -> None:
    assert sorted(models.__all__) == sorted(
        [
            "FORMAT",
            "JSON_KIND",
            "KIND",
            "MAX_BYTES",
            "MAX_ONNX_BYTES",
            "MAX_SENSORS",
            "NAME",
            "ONNX_KIND",
            "ONNX_LIMITS",
            "SCORE_CONFIG",
            "INPUT",
            "AnomalyModel",
            "ExportError",
            "ModelError",
            "OnnxModelError",
            "ScoreSpec",
            "check_doc",
            "check_onnx",
            "dump_model",
            "inspect_onnx",
            "load_model",
            "mismatch",
            "model_kind",
            "sha256",
            "to_onnx",
        ]
    )
    assert issubclass(ModelError, HeadwaterError)
    assert issubclass(models.OnnxModelError, ModelError)


def test_canonical_bytes_round_trip() -> None:
    data = dump_model(doc())
    assert data == json.dumps(doc(), sort_keys=True, separators=(",", ":")).encode()
    model = load_model(data)
    assert isinstance(model, AnomalyModel)
    assert (model.name, model.kind, model.doc) == ("iot-anomaly", "gated-linear/1", doc())
    assert sha256(data) == __import__("hashlib").sha256(data).hexdigest()
    # any JSON spelling of a valid document loads (the registry keeps the bytes it got)
    assert load_model(json.dumps(doc(), indent=2).encode()).doc == doc()


def test_flag_follows_the_documented_rule() -> None:
    m = load_model(dump_model(doc()))
    # first reading: against the level (s0-0: 18 +- 14)
    assert not m.flag("s0-0", None, 31.9)
    assert m.flag("s0-0", None, 32.1)
    # the next value predicted from the previous one: 0.2 + 0.99 * 20 = 20.0 (+- 3)
    assert not m.flag("s0-0", [20.0, 20.5], 22.9)
    assert m.flag("s0-0", [20.0, 20.5], 23.1)
    assert m.flag("s0-0", [20.0, 20.5], 16.9)
    # the previous reading an outlier (35 - 22 = 13 > 7.5): judged on the smoothed level,
    # 1.5 + 0.9 * 22 = 21.3 (+- 12), so falling back from a spike is not an anomaly
    assert not m.flag("s0-0", [35.0, 22.0], 20.0)
    assert m.flag("s0-0", [35.0, 22.0], 33.4)
    # a sensor the model never saw: the default's params (level 20 +- 14)
    assert m.flag("new", None, 34.5) and not m.flag("new", None, 33.5)
    assert not m.flag("s1-0", None, 34.5)  # its own level: 22


def _set(d: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    keys = path.split(".")
    node = d
    for k in keys[:-1]:
        node = node[k]
    if value is _DELETE:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return d


_DELETE = object()


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("format", "headwater-model/2", "format: 'headwater-model/2' is not"),
        ("kind", "mixture/1", "kind: 'mixture/1'"),
        ("name", "../etc", "name: '../etc'"),
        ("name", "x" * 65, "name: "),
        ("name", 7, "name: 7"),
        ("version", 3, "the document: unknown field(s) 'version'"),
        ("created_at", _DELETE, "the document: missing created_at"),
        ("created_at", "now", "created_at: a number, got a string"),
        ("created_at", True, "created_at: a number, got a boolean"),
        ("params.default.next.slope", None, "params.default.next.slope: a number, got null"),
        ("params.default.next.threshold", -1.0, "threshold: -1.0 is below 0.0"),
        ("params.default.next.extra", 1.0, "params.default.next: unknown field(s) 'extra'"),
        ("params.default.gate", [0.0, 1.0], "params.default.gate: an object"),
        ("params.sensors", [], "params.sensors: an object of sensor -> params, got an array"),
        ("params.sensors.s0-0.level", _DELETE, "params.sensors['s0-0']: missing level"),
        ("params.sensors.", _p(), "a sensor name must be 1-256 characters"),
        ("trained.rows", -1, "trained.rows: a non-negative 64-bit integer"),
        ("trained.rows", 2**64, "trained.rows: a non-negative 64-bit integer"),
        ("trained.rows", 1.5, "trained.rows: a non-negative 64-bit integer"),
        ("trained.from_ts", 10_000, "trained: from_ts is after to_ts"),
        ("evaluation.holdout", 1.0, "evaluation.holdout: a fraction strictly between"),
        ("evaluation.model.recall", 1.5, "evaluation.model.recall: 1.5 is above 1.0"),
        ("evaluation.labels", "x" * 300, "evaluation.labels: a text of at most 256"),
        ("evaluation.handset", None, "evaluation.handset: an object"),
    ],
)
def test_invalid_documents_say_what_is_wrong(path: str, value: Any, message: str) -> None:
    bad = _set(copy.deepcopy(doc()), path, value)
    with pytest.raises(ModelError) as exc:
        load_model(json.dumps(bad).encode())
    assert message in str(exc.value)
    with pytest.raises(ModelError):
        dump_model(bad)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not valid JSON"),
        (b"\xff\xfe{", "not UTF-8"),
        (b"[1, 2]", "the document: an object"),
        (b"null", "the document: an object"),
        (b'{"format": NaN}', "NaN is not a number a model may hold"),
        (b'{"format": Infinity}', "Infinity is not a number"),
        (b'{"a": 1, "a": 2}', "the key 'a' appears twice"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"x": ' + b"9" * 5000 + b"}", "not valid JSON"),
    ],
)
def test_malformed_bytes_are_model_errors(data: bytes, message: str) -> None:
    with pytest.raises(ModelError, match=message):
        load_model(data)


def test_non_finite_params_are_refused() -> None:
    text = dump_model(doc()).decode()
    with pytest.raises(ModelError, match="NaN"):
        load_model(text.replace('"slope":0.99', '"slope":NaN', 1).encode())
    with pytest.raises(ModelError, match=r"params\.default\.next\.slope: a finite number, got inf"):
        load_model(text.replace('"slope":0.99', '"slope":1e400', 1).encode())
    bad = doc()
    bad["params"]["default"]["next"]["slope"] = float("nan")
    with pytest.raises(ModelError, match="a finite number, got nan"):
        dump_model(bad)


def test_huge_artifacts_are_refused_before_parsing() -> None:
    with pytest.raises(ModelError, match=f"at most {models.MAX_BYTES}"):
        load_model(b" " * (models.MAX_BYTES + 1))


def test_too_many_sensors_are_refused() -> None:
    big = doc()
    big["params"]["sensors"] = {f"s{i}": _p() for i in range(models.MAX_SENSORS + 1)}
    with pytest.raises(ModelError, match=f"at most {models.MAX_SENSORS}"):
        dump_model(big)


def test_not_bytes_is_refused() -> None:
    with pytest.raises(ModelError, match="bytes, got str"):
        load_model("{}")  # type: ignore[arg-type]
