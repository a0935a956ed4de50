"""The anomaly model as the edge runs it: plain Python floats, no Spark, no numpy.

``AnomalyModel.flag(sensor, prev, value)`` judges one reading of ``sensor``
from the previous reading's ``[value, smoothed]`` (``prev``; None for the
sensor's first) and its own ``value``, with the sensor's parameters (or the
model's default for a sensor it never saw):

- first reading: outlying when ``|value - level.center| > level.threshold``;
- the previous reading itself an outlier (``|prev_value - prev_smoothed -
  gate.center| > gate.threshold``): the value is judged against the smoothed
  level, ``|value - (fallback.intercept + fallback.slope * prev_smoothed)| >
  fallback.threshold``, so the reading after a spike is not flagged for
  falling back;
- otherwise against the prediction from the previous value, ``|value -
  (next.intercept + next.slope * prev_value)| > next.threshold``.

``flag`` is a dict lookup and a few float operations: cheap enough for the
edge component's hot path, and safe to call from any thread (the model is
immutable).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ._artifact import parse

# (level_c, level_t, gate_c, gate_t, next_a, next_b, next_t, fall_a, fall_b, fall_t)
_Row = tuple[float, float, float, float, float, float, float, float, float, float]


def _row(p: dict[str, Any]) -> _Row:
    lv, g, n, f = p["level"], p["gate"], p["next"], p["fallback"]
    return (
        float(lv["center"]),
        float(lv["threshold"]),
        float(g["center"]),
        float(g["threshold"]),
        float(n["intercept"]),
        float(n["slope"]),
        float(n["threshold"]),
        float(f["intercept"]),
        float(f["slope"]),
        float(f["threshold"]),
    )


class AnomalyModel:
    """A loaded, validated artifact: ``name``, ``kind``, ``doc`` and ``flag``."""

    __slots__ = ("_default", "_sensors", "doc", "kind", "name")

    def __init__(self, doc: dict[str, Any]) -> None:
        self.doc = doc
        self.name: str = doc["name"]
        self.kind: str = doc["kind"]
        params = doc["params"]
        self._default = _row(params["default"])
        self._sensors = {s: _row(p) for s, p in params["sensors"].items()}

    def flag(self, sensor: str, prev: Sequence[float] | None, value: float) -> bool:
        """True when ``value`` is an anomaly for ``sensor`` after ``prev`` ([value, smoothed])."""
        p = self._sensors.get(sensor, self._default)
        if prev is None:
            return abs(value - p[0]) > p[1]
        prev_value, prev_smoothed = prev
        if abs(prev_value - prev_smoothed - p[2]) > p[3]:
            return abs(value - (p[7] + p[8] * prev_smoothed)) > p[9]
        return abs(value - (p[4] + p[5] * prev_value)) > p[6]

    def __repr__(self) -> str:
        return f"AnomalyModel({self.name!r}, {len(self._sensors)} sensors)"


def load_model(data: bytes) -> AnomalyModel:
    """The model in the artifact ``data``; ``ModelError`` saying what is wrong if it is invalid.

    >>> from headwater.common.models import load_model
    >>> model = load_model(open("iot-anomaly.json", "rb").read())  # doctest: +SKIP
    >>> model.flag("s0-0", [18.2, 18.0], 33.5)  # doctest: +SKIP
    True
    """
    return AnomalyModel(parse(data))
