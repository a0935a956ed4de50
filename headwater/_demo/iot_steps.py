"""The IoT example's logic as plain functions, shared by its component and DSL versions.

Each keyed step is ``step(state, row) -> (new_state, rows_out)`` for one key
(a sensor, or a site's window): the component version keeps the state in
``ctx.keyed_state``, the DSL's ``flat_map_by_key`` does the same.
"""

from __future__ import annotations

import json
import math
from typing import Any

WINDOW_MS = 10_000
ALPHA = 0.2  # smoothing factor
SIGMAS = 3.0  # anomaly threshold, in running standard deviations
Row = list[Any]


def parse(topic: str, payload: bytes) -> tuple[Row | None, Row | None]:
    """``(row, None)`` for a valid reading, ``(None, [reason, topic, payload])`` otherwise."""
    try:
        r = json.loads(payload)
        if not isinstance(r, dict):
            raise ValueError("a reading must be a JSON object")
        row = [r["site"], r["sensor"], r["seq"], r["ts"], r["value"]]
        if not all(isinstance(v, str) and v for v in row[:2]):
            raise ValueError("site and sensor must be non-empty strings")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in row[2:4]):
            raise ValueError("seq and ts must be non-negative integers")
        v = row[4]
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError("value must be a finite number")
    except KeyError as exc:
        return None, dead_letter(f"missing field {exc.args[0]!r}", topic, payload)
    except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
        return None, dead_letter(str(exc), topic, payload)
    row[4] = float(row[4])
    return row, None


def dead_letter(reason: str, topic: str, payload: bytes) -> Row:
    return [reason, topic, payload[:1024].decode("utf-8", "replace")]


def dedup(last_seq: int | None, row: Row) -> tuple[int | None, list[Row]]:
    """Per sensor: drop a reading whose seq was seen (MQTT QoS 1 may deliver it twice)."""
    if last_seq is not None and row[2] <= last_seq:
        return last_seq, []
    return row[2], [row]


def smooth(ewma: float | None, row: Row) -> tuple[float, list[Row]]:
    """Per sensor: exponentially weighted mean."""
    value = row[4]
    smoothed = value if ewma is None else ewma + ALPHA * (value - ewma)
    return smoothed, [[*row, smoothed]]


def anomaly(stats: tuple[int, float, float] | None, row: Row) -> tuple[Any, list[Row]]:
    """Per sensor: flag readings far from the running mean (Welford's variance)."""
    value = row[4]
    n, mean, m2 = stats or (0, 0.0, 0.0)
    std = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
    flagged = n >= 10 and abs(value - mean) > SIGMAS * std
    n += 1
    delta = value - mean
    mean += delta / n
    m2 += delta * (value - mean)
    return (n, mean, m2), [[*row, flagged]]


def sensor_window(acc: Row | None, row: Row) -> tuple[Row, list[Row]]:
    """Per sensor, 10 s tumbling windows in event time, closed by the sensor's own clock.

    A reading of a later window closes the open one (one sensor's readings
    arrive in order). Emits ``[site, sensor, window, count, sum, min, max, anomalies]``.
    """
    site, sensor, _seq, ts, value, _smoothed, flagged = row
    w = ts - ts % WINDOW_MS
    out: list[Row] = []
    if acc is not None and acc[0] != w:
        out.append([site, sensor, *acc])
        acc = None
    if acc is None:
        acc = [w, 0, 0.0, value, value, 0]
    return [w, acc[1] + 1, acc[2] + value, min(acc[3], value), max(acc[4], value),
            acc[5] + int(flagged)], out  # fmt: skip


def site_key(closed: Row) -> str:
    return f"{closed[0]}/{closed[2]}"


def site_window(s: Row | None, closed: Row) -> tuple[Row, list[Row]]:
    """Per site window (``site/window``): merge each sensor's closed window; emit the row."""
    site, _sensor, w, count, total, lo, hi, flagged = closed
    s = s or [0, 0, 0.0, lo, hi, 0]
    s = [s[0] + 1, s[1] + count, s[2] + total, min(s[3], lo), max(s[4], hi), s[5] + flagged]
    return s, [[f"{site}/{w}", site, w, s[0], s[1], round(s[2] / s[1], 6), s[3], s[4], s[5]]]
