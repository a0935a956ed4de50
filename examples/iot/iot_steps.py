"""The IoT example's steps as plain functions, shared by ``pipeline.py``, ``pipeline_dsl.py``.

Each keyed step is ``step(state, row) -> (new_state, rows_out)`` for one key
(a sensor, or a site's window): the component version keeps the state in
``ctx.keyed_state``, the DSL's ``flat_map_by_key`` does the same. A step
raises ``DeadLetter`` for a reading it refuses (before it changes any state):
the runtime sends it to the topology's dead letters with the reason.

The per-sensor windows are the DSL's ``clock="key"`` tumbling windows (each sensor's
window closed by that sensor's own clock), in both versions; what is here is what
they fold: ``reading_ts``, ``window_zero``, ``window_add`` and ``window_row``.
"""

from __future__ import annotations

import json
import math
from typing import Any

from headwater import DeadLetter

WINDOW_MS = 10_000
ALPHA = 0.2  # smoothing factor
SIGMAS = 3.0  # anomaly threshold, in running standard deviations
MAX_SEQ_JUMP = 100_000  # a seq further ahead of the sensor's last one is implausible
MAX_AHEAD_MS = 3_600_000  # a timestamp further ahead of the reading's arrival is implausible
WIRE_INT = 2**63  # integers must stay below it (the wire carries 64-bit ones)
Row = list[Any]


def parse(topic: str, payload: bytes, received_ms: int | None = None) -> Row:
    """``[site, sensor, seq, ts, value]`` of a valid reading; ``DeadLetter`` with the reason
    otherwise. ``received_ms`` (when the agent ingested it) bounds how far ahead ``ts`` may be:
    deterministic on replay, as it is stored with the reading."""
    try:
        r = json.loads(payload)
        if not isinstance(r, dict):
            raise ValueError("a reading must be a JSON object")
        row = [r["site"], r["sensor"], r["seq"], r["ts"], r["value"]]
        if not all(isinstance(v, str) and v for v in row[:2]):
            raise ValueError("site and sensor must be non-empty strings")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in row[2:4]):
            raise ValueError("seq and ts must be non-negative integers")
        if not all(v < WIRE_INT for v in row[2:4]):
            raise ValueError(f"seq and ts must be below 2**63, got seq {row[2]}, ts {row[3]}")
        v = row[4]
        if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
            raise ValueError("value must be a finite number")
        row[4] = float(v)
    except KeyError as exc:
        raise DeadLetter(f"missing field {exc.args[0]!r}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # JSONDecodeError is a ValueError
        raise DeadLetter(str(exc)) from None
    if received_ms is not None and row[3] > received_ms + MAX_AHEAD_MS:
        raise DeadLetter(
            f"ts {row[3]} is {(row[3] - received_ms) / 3_600_000:.1f} h ahead "
            f"of its arrival ({received_ms}); at most 1 h"
        )
    return row


def dedup(last_seq: int | None, row: Row) -> tuple[int | None, list[Row]]:
    """Per sensor: drop a reading whose seq was seen (MQTT QoS 1 may deliver it twice);
    ``DeadLetter`` for a seq implausibly far ahead, which would silence the sensor."""
    seq = row[2]
    if last_seq is not None:
        if seq <= last_seq:
            return last_seq, []
        if seq - last_seq > MAX_SEQ_JUMP:
            raise DeadLetter(
                f"seq {seq} is {seq - last_seq} ahead of the sensor's last "
                f"({last_seq}); at most {MAX_SEQ_JUMP}"
            )
    return seq, [row]


def smooth(ewma: float | None, row: Row) -> tuple[float, list[Row]]:
    """Per sensor: exponentially weighted mean."""
    value = row[4]
    smoothed = value if ewma is None else ewma + ALPHA * (value - ewma)
    return smoothed, [[*row, smoothed]]


def anomaly(
    state: list[Any] | tuple[int, float, float] | None,
    row: Row,
    model: Any = None,
    version: str = "",
) -> tuple[Any, list[Row]]:
    """Per sensor: flag readings far from the running mean (Welford's variance), or as
    ``model`` (``flag(sensor, prev, value)``) says when one is live.

    The state is ``[n, mean, m2, prev]`` whatever flags the reading (``prev``: the
    previous reading's ``[value, smoothed]``), so a replace that changes the model
    carries it; a 3-tuple (an older revision's Welford stats) is read as no ``prev``.
    Emits the row with ``anomaly`` and ``model`` (``version``; "" for the hand-set
    detector).
    """
    value, smoothed = row[4], row[5]
    n, mean, m2 = (state[0], state[1], state[2]) if state else (0, 0.0, 0.0)
    prev = state[3] if state and len(state) > 3 else None
    if model is None:
        std = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
        flagged = n >= 10 and abs(value - mean) > SIGMAS * std
    else:
        flagged = bool(model.flag(row[1], prev, value))
    n += 1
    delta = value - mean
    mean += delta / n
    m2 += delta * (value - mean)
    return [n, mean, m2, [value, smoothed]], [[*row, flagged, version if model else ""]]


def reading_ts(row: Row) -> int:
    """A reading's event time: its ``ts``."""
    return int(row[3])


def window_zero() -> Row:
    """A sensor window's empty accumulator: ``[site, count, sum, min, max, anomalies]``."""
    return [None, 0, 0.0, math.inf, -math.inf, 0]


def window_add(acc: Row, row: Row) -> Row:
    """Fold a reading (a row of ``anomaly``'s) into its sensor window's accumulator."""
    value, flagged = row[4], row[6]
    return [
        row[0],
        acc[1] + 1,
        acc[2] + value,
        min(acc[3], value),
        max(acc[4], value),
        acc[5] + int(flagged),
    ]


def window_row(window: dict[str, Any]) -> Row:
    """A closed sensor window (the DSL's ``{"key", "start", "end", "value"}``) as the row
    the pipeline lands: ``[site, sensor, window, count, sum, min, max, anomalies]``."""
    site, count, total, lo, hi, flagged = window["value"]
    return [site, window["key"], window["start"], count, total, lo, hi, flagged]


def site_key(closed: Row) -> str:
    return f"{closed[0]}/{closed[2]}"


def site_window(s: Row | None, closed: Row) -> tuple[Row, list[Row]]:
    """Per site window (``site/window``): merge each sensor's closed window; emit the row."""
    site, _sensor, w, count, total, lo, hi, flagged = closed
    s = s or [0, 0, 0.0, lo, hi, 0]
    s = [s[0] + 1, s[1] + count, s[2] + total, min(s[3], lo), max(s[4], hi), s[5] + flagged]
    return s, [[f"{site}/{w}", site, w, s[0], s[1], round(s[2] / s[1], 6), s[3], s[4], s[5]]]
