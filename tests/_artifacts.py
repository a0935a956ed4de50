"""Model artifacts for tests (``headwater.common.models``' format), made without Spark."""

from __future__ import annotations

import json
from typing import Any

_FIGURES: dict[str, int | None] = {"rows": 0, "tp": 0, "fp": 0, "fn": 0, "tn": 0}
_FIGURES |= {"precision": None, "recall": None, "f1": None}


def artifact(threshold: float = 6.0, name: str = "iot-anomaly", created_at: float = 1.0) -> bytes:
    """A ``gated-linear/1`` model: a reading off the previous one by more than ``threshold``
    is an anomaly. The bytes are canonical but not checked: a negative ``threshold`` makes
    an artifact that does not load (``ModelError``)."""
    p = {
        "level": {"center": 20.0, "threshold": 14.0},
        "gate": {"center": 0.0, "threshold": 7.5},
        "next": {"intercept": 0.0, "slope": 1.0, "threshold": threshold},
        "fallback": {"intercept": 0.0, "slope": 1.0, "threshold": 12.0},
    }
    doc: dict[str, Any] = {
        "format": "headwater-model/1",
        "name": name,
        "kind": "gated-linear/1",
        "params": {"default": p, "sensors": {}},
        "trained": {"from_ts": 0, "to_ts": 0, "rows": 0, "sensors": 0},
        "evaluation": {
            "holdout": 0.25,
            "split": "none: made by a test",
            "labels": "none",
            "test_rows": 0,
            "model": dict(_FIGURES),
            "handset": dict(_FIGURES),
        },
        "created_at": created_at,
    }
    return json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
