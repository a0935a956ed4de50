"""``headwater.models.register``: a model registered from code through a real master process,
its version's record returned; what would be refused is said before anything is sent
(metadata over the registry's bound, no master, no token), and what the master refuses
(a viewer's token, not a model) is its reason, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from headwater.cloud.master._models import MAX_USER_META_BYTES
from headwater.common._exceptions import HeadwaterError
from headwater.models import MAX_META_BYTES, Registry, register, training_meta
from tests import _onnx_models

from .test_rest_auth import _cli, master  # noqa: F401  (master: the fixture)


def test_register_from_code_returns_the_version_record(
    master: dict[str, Any],  # noqa: F811
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    url = master["http"]
    admin = (master["state"] / "admin.token").read_text().strip()
    meta = training_meta(
        dataset="vibration",
        data_range={"from_ts": 1, "to_ts": 2, "rows": 10},
        evaluation={"mae": 0.5},
        output_range=[-1, 2.5],
    )
    record = register(_onnx_models.linear(), "vib", meta=meta, master=url, token=admin)
    assert (record["name"], record["version"], record["kind"]) == ("vib", 1, "onnx/1")
    assert record["metadata"] == {
        "dataset": "vibration",
        "data_range": {"from_ts": 1, "to_ts": 2, "rows": 10},
        "evaluation": {"mae": 0.5},
        "output_range": [-1.0, 2.5],
    }
    assert record["inputs"] and record["outputs"]

    model = tmp_path / "vib.onnx"  # a path, and the master and token from the environment
    model.write_bytes(_onnx_models.linear())
    monkeypatch.setenv("HEADWATER_MASTER", url)
    monkeypatch.setenv("HEADWATER_TOKEN", admin)
    assert register(model, "vib")["version"] == 2
    assert repr(Registry(url, admin)) == f"Registry({url!r})"  # never the token

    viewer = _cli("token", "create", "--role", "viewer", "--master", url, "--token", admin)
    assert viewer.returncode == 0, viewer
    with pytest.raises(HeadwaterError, match=r"refused the request.*ask an admin"):
        register(_onnx_models.linear(), "vib", master=url, token=viewer.stdout.splitlines()[0])
    with pytest.raises(HeadwaterError, match="not an ONNX model"):
        register(b"garbage", "vib", master=url, token=admin)


def test_refused_before_sending(monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_META_BYTES == MAX_USER_META_BYTES  # the master's bound, checked here first
    with pytest.raises(HeadwaterError, match="over the registry's 2048"):
        training_meta(dataset="d", data_range={}, evaluation={"x": "y" * 3000}, output_range=[0, 1])
    with pytest.raises(HeadwaterError, match=r"output_range \[2.0, 1.0\]"):
        training_meta(dataset="d", data_range={}, evaluation={}, output_range=[2, 1])
    # a careless call: a range that is no pair of numbers, a list where a dict goes
    for bad in ("ab", [0, 1, 2], None):
        with pytest.raises(HeadwaterError, match=r"output_range .*: give \[lo, hi\], two finite"):
            training_meta(dataset="d", data_range={}, evaluation={}, output_range=bad)  # type: ignore[arg-type]
    with pytest.raises(HeadwaterError, match=r"data_range is a dict \(e.g. .*\), not \[1\]"):
        training_meta(dataset="d", data_range=[1], evaluation={}, output_range=[0, 1])  # type: ignore[arg-type]
    with pytest.raises(HeadwaterError, match="evaluation is a dict"):
        training_meta(dataset="d", data_range={}, evaluation=0.9, output_range=[0, 1])  # type: ignore[arg-type]
    with pytest.raises(HeadwaterError, match="meta is not JSON"):
        Registry("http://127.0.0.1:9", "t").register(b"x", "m", meta={"x": float("nan")})
    monkeypatch.delenv("HEADWATER_MASTER", raising=False)
    with pytest.raises(HeadwaterError, match="name the master"):
        register(b"x", "m")
    monkeypatch.setenv("HEADWATER_MASTER", "http://127.0.0.1:9")
    monkeypatch.delenv("HEADWATER_TOKEN", raising=False)
    with pytest.raises(HeadwaterError, match="names a master but no token"):
        register(b"x", "m")
    assert json.loads(json.dumps({"ok": 1}))  # the module imports no Spark and no converter


def test_spark_run_with_a_master_needs_a_token(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("def run(spark, ctx):\n    pass\n")
    (tmp_path / "landing").mkdir()
    got = _cli(
        "spark",
        "run",
        str(job),
        "--landing",
        str(tmp_path / "landing"),
        "--warehouse",
        str(tmp_path / "wh"),
        "--master",
        "http://127.0.0.1:9",
        env={"HEADWATER_TOKEN": "", "HEADWATER_MASTER": ""},
    )
    assert got.returncode == 2, got
    assert "registering models needs an admin token" in got.stderr
    assert "Traceback" not in got.stderr
