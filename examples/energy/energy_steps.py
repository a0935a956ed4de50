"""The energy example's edge steps as plain functions, run in bolts by ``energy_pipeline.py``.

A meter's reading is ``[meter_id, site, seq, ts, kwh, voltage]`` once parsed. Each keyed
step is ``step(state, row) -> (new_state, out)`` for one meter; it raises ``DeadLetter``
for a reading it refuses (before changing any state), and the runtime sends the reading,
with the reason, to the topology's dead letters.
"""

from __future__ import annotations

import json
import math
from typing import Any

from headwater import DeadLetter

SAG_V = 207.0  # a reading below it is a voltage sag (230 V nominal, -10 %)
MAX_SEQ_JUMP = 100_000  # a seq further ahead of the meter's last one is implausible
MAX_AHEAD_MS = 3_600_000  # a ts further ahead of the reading's arrival is implausible
WIRE_INT = 2**63
Row = list[Any]


def parse(topic: str, payload: bytes, received_ms: int | None = None) -> Row:
    """``[meter_id, site, seq, ts, kwh, voltage]`` of a valid reading on the topic
    ``meters/<site>/<meter_id>``; ``DeadLetter`` with the reason otherwise."""
    try:
        r = json.loads(payload)
        if not isinstance(r, dict):
            raise ValueError("a reading must be a JSON object")
        row = [r["meter_id"], r["site"], r["seq"], r["ts"], r["kwh"], r["voltage"]]
        if not all(isinstance(v, str) and v for v in row[:2]):
            raise ValueError("meter_id and site must be non-empty strings")
        if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in row[2:4]):
            raise ValueError("seq and ts must be non-negative integers")
        if not all(v < WIRE_INT for v in row[2:4]):
            raise ValueError(f"seq and ts must be below 2**63, got seq {row[2]}, ts {row[3]}")
        for at, name in ((4, "kwh"), (5, "voltage")):
            v = row[at]
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number")
            if v < 0:
                raise ValueError(f"{name} must not be negative, got {v}")
            row[at] = float(v)
    except KeyError as exc:
        raise DeadLetter(f"missing field {exc.args[0]!r}") from None
    except (ValueError, TypeError, OverflowError) as exc:  # JSONDecodeError is a ValueError
        raise DeadLetter(str(exc)) from None
    if topic != f"meters/{row[1]}/{row[0]}":
        raise DeadLetter(f"topic {topic!r} is not meters/{row[1]}/{row[0]}, the reading's own")
    if received_ms is not None and row[3] > received_ms + MAX_AHEAD_MS:
        raise DeadLetter(
            f"ts {row[3]} is {(row[3] - received_ms) / 3_600_000:.1f} h ahead "
            f"of its arrival ({received_ms}); at most 1 h"
        )
    return row


def dedup(last_seq: int | None, row: Row) -> tuple[int | None, list[Row]]:
    """Per meter: drop a reading whose seq was seen (MQTT QoS 1 may deliver it twice);
    ``DeadLetter`` for a seq implausibly far ahead, which would silence the meter."""
    seq = row[2]
    if last_seq is not None:
        if seq <= last_seq:
            return last_seq, []
        if seq - last_seq > MAX_SEQ_JUMP:
            raise DeadLetter(
                f"seq {seq} is {seq - last_seq} ahead of the meter's last "
                f"({last_seq}); at most {MAX_SEQ_JUMP}"
            )
    return seq, [row]


def sag(in_sag: bool | None, row: Row) -> tuple[bool, Row, list[Row]]:
    """Per meter: the reading with its ``low_voltage`` flag, and the grid events it makes:
    ``[meter_id, site, ts, "sag", voltage]`` at the first reading below ``SAG_V``,
    ``[..., "recover", voltage]`` at the first one at or above it after a sag."""
    meter_id, site, _seq, ts, _kwh, voltage = row
    low = voltage < SAG_V
    events: list[Row] = []
    if low and not in_sag:
        events.append([meter_id, site, ts, "sag", voltage])
    elif not low and in_sag:
        events.append([meter_id, site, ts, "recover", voltage])
    return low, [*row, low], events
