"""A model in a topology package: the package a rollout's replace edit sends.

A rollout (``_rollout.py``) edits a running topology with its current
revision's package plus ``headwater_models.json`` and ``models/<sha256>.json``
(``.onnx`` for an ONNX model, told by its content as the registry tells it) beside the topology
file (``common/plan/_package_models.py`` says what the file holds and how a
component picks its version by its agent's labels and id):
``package_with`` sets one component's entry in that file and keeps the artifacts
the file names, ``models_of`` reads the file back, ``entry_version`` says which
version an entry gives by default (or to its canary).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import PurePosixPath
from typing import Any

from headwater.common._package import package_files, zip_package
from headwater.common.models import model_kind
from headwater.common.plan._package_models import (
    ARTIFACT_SUFFIXES,
    MODELS_DIR,
    MODELS_FILE,
    artifact_name,
)


def entry_version(entry: dict[str, Any] | None, key: str = "default") -> int:
    """The version ``entry`` gives by ``key`` (``default`` or ``canary``); 0 for none."""
    pick = (entry or {}).get(key)
    return int(pick["version"]) if pick else 0


def package_with(
    data: bytes,
    entry_file: str,
    component: str,
    entry: dict[str, Any],
    artifacts: dict[str, bytes],
) -> bytes:
    """``data`` (a package) with ``component``'s entry of the models file set to ``entry``.

    The models file and ``models/<sha256>.json`` (``.onnx`` for a pick of the ONNX kind)
    sit beside the topology file (``entry_file``); the artifacts kept are those the file
    names (``artifacts`` gives the new ones, the package the rest). Deterministic, as
    ``build_package``."""
    folder = PurePosixPath(entry_file).parent
    models_file = str(folder / MODELS_FILE) if str(folder) != "." else MODELS_FILE
    models_dir = str(folder / MODELS_DIR) if str(folder) != "." else MODELS_DIR
    files = package_files(data)
    doc = json.loads(files.pop(models_file, b"{}"))
    doc[component] = entry
    known = {
        name.rsplit("/", 1)[-1].rsplit(".", 1)[0]: files.pop(name)
        for name in [n for n in files if _is_artifact(n, models_dir)]
    }
    known.update(artifacts)
    for e in doc.values():
        for key in ("default", "canary"):
            if e.get(key):
                sha = e[key]["sha256"]
                files[f"{models_dir}/{artifact_name(sha, model_kind(known[sha]))}"] = known[sha]
    files[models_file] = (json.dumps(doc, sort_keys=True, indent=1) + "\n").encode()
    return zip_package(files)


def _is_artifact(name: str, models_dir: str) -> bool:
    return name.startswith(f"{models_dir}/") and name.endswith(tuple(ARTIFACT_SUFFIXES))


def models_of(data: bytes, entry_file: str) -> dict[str, Any]:
    """The models file of a package (component -> entry), ``{}`` when it has none."""
    folder = PurePosixPath(entry_file).parent
    name = str(folder / MODELS_FILE) if str(folder) != "." else MODELS_FILE
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        try:
            return dict(json.loads(zf.read(name)))
        except KeyError:
            return {}
