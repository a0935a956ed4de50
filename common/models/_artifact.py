"""The model artifact's document: its schema, its canonical bytes, and the checks a loader makes.

An artifact is a JSON document, stored and shipped as its canonical bytes
(``dump_model``: sorted keys, no spaces) and identified by their SHA-256. It
arrives from the network (an upload to the master, a package on a gateway),
so ``check_doc`` validates every field: types, finite numbers, bounded sizes
and counts; anything else is a ``ModelError`` that says which field and why.

    {"format": "headwater-model/1", "name": "iot-anomaly", "kind": "gated-linear/1",
     "params": {"default": P, "sensors": {"s0-0": P, ...}},
     "trained": {"from_ts": ms, "to_ts": ms, "rows": n, "sensors": n},
     "evaluation": {"holdout": 0.25, "split": "...", "labels": "...", "test_rows": n,
                    "model": FIGURES, "handset": FIGURES},
     "created_at": unix_seconds}

    P       = {"level": {"center", "threshold"}, "gate": {"center", "threshold"},
               "next": {"intercept", "slope", "threshold"},
               "fallback": {"intercept", "slope", "threshold"}}
    FIGURES = {"rows", "tp", "fp", "fn", "tn": ints; "precision", "recall", "f1": 0..1 or null}

The document has no version: the registry assigns one on upload.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

from headwater.common._exceptions import HeadwaterError

FORMAT = "headwater-model/1"
KIND = "gated-linear/1"
MAX_SENSORS = 50_000
MAX_BYTES = 16 * 1024 * 1024  # one sensor's params take ~300 bytes: room for MAX_SENSORS
MAX_TEXT = 256  # sensor names, the split and labels descriptions
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")

_TOP = ("format", "name", "kind", "params", "trained", "evaluation", "created_at")
_PARTS: dict[str, tuple[str, ...]] = {
    "level": ("center", "threshold"),
    "gate": ("center", "threshold"),
    "next": ("intercept", "slope", "threshold"),
    "fallback": ("intercept", "slope", "threshold"),
}
_TRAINED = ("from_ts", "to_ts", "rows", "sensors")
_EVALUATION = ("holdout", "split", "labels", "test_rows", "model", "handset")
_COUNTS = ("rows", "tp", "fp", "fn", "tn")
_RATIOS = ("precision", "recall", "f1")


class ModelError(HeadwaterError):
    """A model artifact that is not valid: the message says which field and why."""


def sha256(data: bytes) -> str:
    """The artifact's identity: the hex SHA-256 of its bytes."""
    return hashlib.sha256(data).hexdigest()


def dump_model(doc: dict[str, Any]) -> bytes:
    """The canonical bytes of ``doc`` (checked first: ``ModelError`` if it is not valid)."""
    check_doc(doc)
    return _canonical(doc)


def _canonical(doc: Any) -> bytes:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def parse(data: bytes) -> dict[str, Any]:
    """The checked document in ``data``; ``ModelError`` saying what is wrong otherwise."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ModelError(f"a model artifact is bytes, got {type(data).__name__}")
    if len(data) > MAX_BYTES:
        raise ModelError(f"the artifact is {len(data)} bytes; at most {MAX_BYTES}")
    try:
        text = bytes(data).decode("utf-8")
        doc = json.loads(text, parse_constant=_no_constant, object_pairs_hook=_no_duplicates)
    except UnicodeDecodeError as exc:
        raise ModelError(f"the artifact is not UTF-8 text ({exc.reason})") from None
    except RecursionError:
        raise ModelError("the artifact's JSON is nested too deeply") from None
    except ValueError as exc:  # JSONDecodeError, our own hooks, int digit limits
        raise ModelError(f"the artifact is not valid JSON: {exc}") from None
    check_doc(doc)
    return doc  # type: ignore[no-any-return]


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number a model may hold")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} appears twice in one object")
        out[key] = value
    return out


def check_doc(doc: Any) -> None:
    """``ModelError`` naming the first field of ``doc`` that is not as the format says."""
    _fields(doc, "the document", _TOP)
    if doc["format"] != FORMAT:
        raise ModelError(f"format: {doc['format']!r} is not {FORMAT!r} (unknown artifact format)")
    if not isinstance(doc["name"], str) or not NAME.fullmatch(doc["name"]):
        raise ModelError(
            f"name: {doc['name']!r} is not 1-64 letters, digits, '.', '_' or '-' "
            "(starting with a letter or digit)"
        )
    if doc["kind"] != KIND:
        raise ModelError(f"kind: {doc['kind']!r} is not a kind this version scores ({KIND!r})")
    _number(doc["created_at"], "created_at", low=0.0)
    params = doc["params"]
    _fields(params, "params", ("default", "sensors"))
    _params(params["default"], "params.default")
    sensors = params["sensors"]
    if not isinstance(sensors, dict):
        raise ModelError(f"params.sensors: an object of sensor -> params, got {_kind(sensors)}")
    if len(sensors) > MAX_SENSORS:
        raise ModelError(f"params.sensors: {len(sensors)} sensors; at most {MAX_SENSORS}")
    for sensor, p in sensors.items():
        if not sensor or len(sensor) > MAX_TEXT:
            raise ModelError(f"params.sensors: a sensor name must be 1-{MAX_TEXT} characters")
        _params(p, f"params.sensors[{sensor!r}]")
    trained = doc["trained"]
    _fields(trained, "trained", _TRAINED)
    for key in _TRAINED:
        _count(trained[key], f"trained.{key}")
    if trained["from_ts"] > trained["to_ts"]:
        raise ModelError("trained: from_ts is after to_ts")
    ev = doc["evaluation"]
    _fields(ev, "evaluation", _EVALUATION)
    holdout = _number(ev["holdout"], "evaluation.holdout", low=0.0, high=1.0)
    if holdout in (0.0, 1.0):
        raise ModelError("evaluation.holdout: a fraction strictly between 0 and 1")
    for key in ("split", "labels"):
        if not isinstance(ev[key], str) or len(ev[key]) > MAX_TEXT:
            raise ModelError(f"evaluation.{key}: a text of at most {MAX_TEXT} characters")
    _count(ev["test_rows"], "evaluation.test_rows")
    for who in ("model", "handset"):
        figures = ev[who]
        _fields(figures, f"evaluation.{who}", _COUNTS + _RATIOS)
        for key in _COUNTS:
            _count(figures[key], f"evaluation.{who}.{key}")
        for key in _RATIOS:
            if figures[key] is not None:
                _number(figures[key], f"evaluation.{who}.{key}", low=0.0, high=1.0)


def _params(p: Any, where: str) -> None:
    _fields(p, where, tuple(_PARTS))
    for part, keys in _PARTS.items():
        _fields(p[part], f"{where}.{part}", keys)
        for key in keys:
            low = 0.0 if key == "threshold" else None
            _number(p[part][key], f"{where}.{part}.{key}", low=low)


def _fields(obj: Any, where: str, keys: tuple[str, ...]) -> None:
    if not isinstance(obj, dict):
        raise ModelError(f"{where}: an object with {', '.join(keys)}; got {_kind(obj)}")
    missing = [k for k in keys if k not in obj]
    if missing:
        raise ModelError(f"{where}: missing {', '.join(missing)}")
    extra = sorted(k for k in obj if k not in keys)
    if extra:
        shown = ", ".join(repr(k[:40]) for k in extra[:5])
        raise ModelError(f"{where}: unknown field(s) {shown} (known: {', '.join(keys)})")


def _number(v: Any, where: str, low: float | None = None, high: float | None = None) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ModelError(f"{where}: a number, got {_kind(v)}")
    try:
        x = float(v)
    except OverflowError:
        raise ModelError(f"{where}: {v} is out of range for a float") from None
    if not math.isfinite(x):
        raise ModelError(f"{where}: a finite number, got {x}")
    if low is not None and x < low:
        raise ModelError(f"{where}: {x} is below {low}")
    if high is not None and x > high:
        raise ModelError(f"{where}: {x} is above {high}")
    return x


def _count(v: Any, where: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v < 2**63:
        raise ModelError(f"{where}: a non-negative 64-bit integer, got {_kind(v)} {_short(v)}")
    return v


def _kind(v: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(v), "null" if v is None else type(v).__name__
    )


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."
