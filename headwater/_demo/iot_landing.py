"""The IoT example's landing zone (``$IOT_OUT/landing``), shared by both of its versions.

    readings        every reading with its anomaly flag (the anomaly step's output)
    sensor_windows  every sensor's closed 10 s windows (the windows step's output)
    dead_letters    every component's dead letters, the record as JSON text

Parquet, partitioned by the UTC date of the event time (``ts``, ``window``) and
the site; dead letters by the date of the refused record's own time (see
``dead_letter_time``). Read with ``headwater.common.connectors.read_landing``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from headwater.common.connectors import LandingSink

# the columns of a reading and of a closed window, as the steps emit them
READING = ("site", "sensor", "seq", "ts", "value", "smoothed", "anomaly", "model")
WINDOW = ("site", "sensor", "window", "count", "sum", "min", "max", "anomalies")


def readings(out: str, fields: Sequence[str] | None = None) -> partial[LandingSink]:
    """The sink of ``readings``: ``fields`` when rows arrive as a DSL record's value."""
    return partial(
        LandingSink, f"{out}/landing", "readings", event_time="ts", site="site", fields=fields
    )


def sensor_windows(out: str, fields: Sequence[str] | None = None) -> partial[LandingSink]:
    return partial(
        LandingSink,
        f"{out}/landing",
        "sensor_windows",
        event_time="window",
        site="site",
        fields=fields,
    )


def dead_letters(out: str) -> partial[LandingSink]:
    return partial(LandingSink, f"{out}/landing", "dead_letters", event_time=dead_letter_time)


def dead_letter_time(row: dict[str, Any]) -> int | None:
    """A dead letter's event time, from its record (so the same on replay): a raw reading's
    ``received_ms`` (``[topic, payload, received_ms]``), a parsed reading's ``ts``
    (``[site, sensor, seq, ts, ...]``, alone or as a DSL ``[key, row]``); else None (the
    null date)."""
    record = row.get("record")
    if isinstance(record, list | tuple) and len(record) == 2 and isinstance(record[1], list):
        record = record[1]
    if not isinstance(record, list | tuple):
        return None
    at = 2 if len(record) == 3 else 3
    value = record[at] if len(record) > at else None
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63
    return value if ok else None
