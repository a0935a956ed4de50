"""The models a topology package ships for its components: ``headwater_models.json``.

A model rollout (``cloud/master/_rollout.py``; its package is built by
``cloud/master/_model_package.py``) makes a new package revision: the running
package plus, beside its topology file, ``headwater_models.json`` and each
model's artifact as ``models/<sha256>.json`` (``.onnx`` for an ONNX
model). The file says, per component, which model version runs by default and
which on the agents a canary picks, by a label selector or by agent id (a
rollout's waves)::

    {"anomaly": {"name": "iot-anomaly",
                 "default": {"version": 1, "sha256": "...", "kind": "gated-linear/1"},
                 "canary": {"selector": {"site": "site0"}, "agents": ["gw-3"],
                            "version": 2, "sha256": "...", "kind": "onnx/1",
                            "range": [0.0, 1.0]}}}

A pick's ``kind`` (the registry's: ``onnx/1`` or the JSON document's) and
``range`` (the output range the registry's metadata expects, ``[lo, hi]``)
are optional; a canary has a ``selector``, ``agents`` or both (an agent is
picked by either). ``default`` may be null (the component's own logic, e.g. a hand-set
detector, runs where no canary applies). Loading a topology file
(``_loader``) puts a component's entry into its config under ``MODEL_CONFIG``
(as canonical JSON), so that a change of model is a change of the component:
a ``replace`` edit replaces it on every agent, with its state carried, and
the agents' own diffs see it. The component picks its version with
``pick(entry, labels)`` at open and reads the bytes with ``model_bytes``,
which checks their SHA-256; never from anywhere else.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .._exceptions import HeadwaterError, TopologyLoadError
from ..models import MAX_BYTES, MAX_ONNX_BYTES, ONNX_KIND

MODELS_FILE = "headwater_models.json"
"""The file, beside the topology file, naming each component's models."""
MODELS_DIR = "models"
"""The folder, beside the topology file, holding the artifacts as ``<sha256>.json``
(``<sha256>.onnx`` for an ONNX model: ``artifact_name``)."""
ARTIFACT_SUFFIXES = {".json": MAX_BYTES, ".onnx": MAX_ONNX_BYTES}
"""An artifact's file suffix in ``MODELS_DIR`` by kind (JSON, ONNX), and its size bound."""
MODEL_CONFIG = "headwater.model"
"""The component config key holding its entry of ``MODELS_FILE`` (canonical JSON)."""
_SHA = re.compile(r"[0-9a-f]{64}")


class PackageModelError(HeadwaterError):
    """The package's models file or a model it names is missing, malformed or altered."""


def canonical(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def entry_problem(entry: Any) -> str | None:
    """Why ``entry`` (one component's value in ``MODELS_FILE``) is malformed, or None."""
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        return 'an entry is {"name": MODEL, "default": PICK | null, "canary": PICK | null}'
    for key in ("default", "canary"):
        pick = entry.get(key)
        if pick is None:
            continue
        if not isinstance(pick, dict):
            return f"{key} must be an object or null"
        problem = _pick_problem(key, pick)
        if problem is not None:
            return problem
    canary = entry.get("canary")
    if canary is not None:
        selector, agents = canary.get("selector"), canary.get("agents")
        if selector is None and agents is None:
            return "canary needs a selector (label: value) or agents (their ids), or both"
        if selector is not None and (
            not isinstance(selector, dict)
            or not selector
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in selector.items())
        ):
            return "canary.selector must be a non-empty object of label: value"
        if agents is not None and (
            not isinstance(agents, list)
            or not agents
            or not all(isinstance(a, str) and a for a in agents)
        ):
            return "canary.agents must be a non-empty list of agent ids"
    return None


def _pick_problem(key: str, pick: dict[str, Any]) -> str | None:
    version, sha = pick.get("version"), pick.get("sha256")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        return f"{key}.version must be a positive whole number"
    if not isinstance(sha, str) or not _SHA.fullmatch(sha):
        return f"{key}.sha256 must be 64 lowercase hex digits"
    if "kind" in pick and not isinstance(pick["kind"], str):
        return f"{key}.kind must be a string (onnx/1, gated-linear/1)"
    bounds = pick.get("range")
    if "range" in pick and not (
        isinstance(bounds, list)
        and len(bounds) == 2
        and all(isinstance(b, int | float) and not isinstance(b, bool) for b in bounds)
        and bounds[0] <= bounds[1]
    ):
        return f"{key}.range must be [low, high], two numbers, low <= high"
    return None


def read_models(folder: Path) -> dict[str, Any] | None:
    """The models file in ``folder`` (component -> entry), or None when there is none.

    Raises PackageModelError when it is there but malformed."""
    path = folder / MODELS_FILE
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as exc:
        raise PackageModelError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise PackageModelError(f"{path}: must be an object of component -> entry")
    for component, entry in doc.items():
        problem = entry_problem(entry)
        if problem is not None:
            raise PackageModelError(f"{path}: component {component!r}: {problem}")
    return doc


def with_models(topology: Any, folder: Path) -> Any:
    """``topology`` with each component named in ``folder``'s models file carrying its entry
    in its config (``MODEL_CONFIG``); as it is when there is no such file."""
    from dataclasses import replace

    try:
        models = read_models(folder)
    except PackageModelError as exc:
        raise TopologyLoadError(str(exc)) from None
    if not models:
        return topology
    names = {c.name for c in topology.components}
    unknown = sorted(set(models) - names)
    if unknown:
        raise TopologyLoadError(
            f"{folder / MODELS_FILE} names {unknown}, which the topology does not have"
        )
    components = tuple(
        replace(c, config={**c.config, MODEL_CONFIG: canonical(models[c.name])})
        if c.name in models
        else c
        for c in topology.components
    )
    return replace(topology, components=components)


def pick(
    entry: Mapping[str, Any] | None, labels: Mapping[str, str], agent: str = ""
) -> dict[str, Any] | None:
    """The model the agent ``agent`` with ``labels`` runs: ``{"name", "version",
    "sha256"}`` plus the pick's ``kind`` and ``range`` when it has them; None for the
    component's own logic (no entry, or no default and not a canary). An agent is a
    canary's when its labels match the canary's selector or its id is in its agents."""
    if not entry:
        return None
    canary = entry.get("canary")
    chosen = entry.get("default")
    if canary and _is_canary(canary, labels, agent):
        chosen = canary
    if not chosen:
        return None
    out = {"name": entry["name"], "version": chosen["version"], "sha256": chosen["sha256"]}
    out.update({k: chosen[k] for k in ("kind", "range") if k in chosen})
    return out


def _is_canary(canary: Mapping[str, Any], labels: Mapping[str, str], agent: str) -> bool:
    selector = canary.get("selector")
    if selector and all(labels.get(k) == v for k, v in selector.items()):
        return True
    return bool(agent) and agent in (canary.get("agents") or ())


def artifact_name(sha256: str, kind: str | None) -> str:
    """The file name of a model's artifact in ``MODELS_DIR``, by its kind."""
    return f"{sha256}.onnx" if kind == ONNX_KIND else f"{sha256}.json"


def model_bytes(folder: Path, sha256: str) -> bytes:
    """The artifact ``models/<sha256>.json`` or ``models/<sha256>.onnx`` in ``folder``,
    checked against its SHA-256."""
    if not _SHA.fullmatch(sha256):
        raise PackageModelError(f"{sha256[:80]!r} is not a SHA-256 (64 lowercase hex digits)")
    paths = [(folder / MODELS_DIR / f"{sha256}{s}", b) for s, b in ARTIFACT_SUFFIXES.items()]
    path, bound = next(((p, b) for p, b in paths if p.is_file()), paths[0])
    try:
        size = path.stat().st_size
        if size > bound:  # no model is that large: do not read (and hash) it all
            raise PackageModelError(
                f"model file {path.name} is {size} bytes; a model is at most {bound}"
            )
        data = path.read_bytes()
    except OSError as exc:
        raise PackageModelError(f"the package has no model {sha256[:12]}: {exc}") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != sha256:
        raise PackageModelError(
            f"model file {path.name} hashes to {actual[:12]}…, not {sha256[:12]}…: it was "
            "altered or corrupted; roll the model out again"
        )
    return data
