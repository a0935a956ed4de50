"""A package's models tampered with, and an instance started with odd labels (issue 16).

The anomaly step of the IoT example (``headwater.models.live_model``)
must refuse to open with a HeadwaterError saying why, never run a model it
misread and never read an unbounded file.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from headwater.common._exceptions import HeadwaterError
from headwater.common.models import MAX_BYTES
from headwater.common.plan._package_models import (
    MODEL_CONFIG,
    PackageModelError,
    model_bytes,
    read_models,
)
from headwater.common.runtime.instance import LABELS_ENV, TOPOLOGY_FILE_ENV
from headwater.models import live_model
from tests._artifacts import artifact


def _package(tmp_path: Path) -> tuple[str, dict[str, object]]:
    data = artifact(5.0, "m")
    sha = hashlib.sha256(data).hexdigest()
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / f"{sha}.json").write_bytes(data)
    entry = {"name": "m", "default": {"version": 1, "sha256": sha}, "canary": None}
    return sha, {MODEL_CONFIG: json.dumps(entry)}


@pytest.mark.parametrize(
    "labels", ["not json", "[1, 2]", '{"site": 3}', "[" * 100_000, '"site0"', "null"]
)
def test_labels_that_are_not_an_object_of_text_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, labels: str
) -> None:
    _, config = _package(tmp_path)
    monkeypatch.setenv(TOPOLOGY_FILE_ENV, str(tmp_path / "topo.py"))
    monkeypatch.setenv(LABELS_ENV, labels)
    with pytest.raises(HeadwaterError, match=f"{LABELS_ENV} must be a JSON object"):
        live_model(config)


def test_no_labels_at_all_is_an_agent_without_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, config = _package(tmp_path)
    monkeypatch.setenv(TOPOLOGY_FILE_ENV, str(tmp_path / "topo.py"))
    monkeypatch.delenv(LABELS_ENV, raising=False)
    model, version = live_model(config)
    assert model is not None and version == "1"


def test_an_oversized_model_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    sha, _ = _package(tmp_path)
    with (tmp_path / "models" / f"{sha}.json").open("r+b") as f:
        f.truncate(MAX_BYTES + 1)  # sparse: no need to write it
    with pytest.raises(PackageModelError, match=f"is {MAX_BYTES + 1} bytes; a model is at"):
        model_bytes(tmp_path, sha)


def test_tampered_files_are_refused(tmp_path: Path) -> None:
    sha, _ = _package(tmp_path)
    (tmp_path / "models" / f"{sha}.json").write_bytes(artifact(6.0, "m"))
    with pytest.raises(PackageModelError, match="altered or corrupted"):
        model_bytes(tmp_path, sha)
    for trick in ("../" + sha[3:], sha.upper(), sha + "\n", "/etc/passwd", ""):
        with pytest.raises(PackageModelError, match="is not a SHA-256"):
            model_bytes(tmp_path, trick)
    (tmp_path / "models" / f"{'0' * 64}.json").mkdir()  # a folder where the file should be
    with pytest.raises(PackageModelError, match="the package has no model 000000000000"):
        model_bytes(tmp_path, "0" * 64)
    for doc in (
        "[",
        "[" * 100_000,
        "[1]",
        '{"c": {"name": "m", "default": {"version": 1, "sha256": "../x"}}}',
    ):
        (tmp_path / "headwater_models.json").write_text(doc)
        with pytest.raises(PackageModelError):
            read_models(tmp_path)
