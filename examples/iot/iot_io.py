"""Where the IoT example reads and writes: its ingest log, its output folder, its landing zone.

- the ingest log: ``IOT_LOG``, else (on an agent) the agent's own (``HEADWATER_INGEST_LOG``);
  with neither, the ``readings`` spout refuses to open, saying what to set, instead of
  idling on a log that does not exist;
- the outputs: ``IOT_OUT``, else ``./iot-out`` under the current folder (said on stderr),
  never a system folder;
- the landing zone, ``$IOT_OUT/landing``: Parquet, partitioned by the UTC date of the
  event time (``ts``, ``window``) and the site; dead letters by the date of the refused
  record's own time (``dead_letter_time``). Read it with
  ``headwater.connectors.read_landing`` (or ``headwater read``)::

    readings        every reading with its anomaly flag (the anomaly step's output)
    sensor_windows  every sensor's closed 10 s windows (the windows step's output)
    dead_letters    every component's dead letters, the record as JSON text

Both versions of the pipeline (``pipeline.py``, ``pipeline_dsl.py``) use these.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from functools import partial
from typing import Any

from headwater import Context
from headwater.connectors import LandingSink, LogSpout

NO_LOG = (
    "no ingest log to read: set IOT_LOG to the folder of a durable log of readings (an "
    "agent's ingest/ in its --workdir, or the folder an MqttIngest writes), or submit the "
    "topology to a master with agents, whose edge half reads the agent's own log"
)
# the columns of a reading and of a closed window, as the steps emit them
READING = ("site", "sensor", "seq", "ts", "value", "smoothed", "anomaly", "model")
WINDOW = ("site", "sensor", "window", "count", "sum", "min", "max", "anomalies")


def ingest_log() -> str:
    """The ingest log's folder, or "" when none is named (said at once, on stderr)."""
    log = os.environ.get("IOT_LOG") or os.environ.get("HEADWATER_INGEST_LOG", "")
    if not log:
        print(f"IOT_LOG is not set: {NO_LOG}", file=sys.stderr)
    return log


def out_dir() -> str:
    """``IOT_OUT``, else ``iot-out`` under the current folder (said once per process)."""
    out = os.environ.get("IOT_OUT")
    if out:
        return out
    out = os.path.abspath("iot-out")
    print(f"IOT_OUT is not set: the IoT example writes its outputs under {out}", file=sys.stderr)
    return out


class Readings(LogSpout):
    """The ingest log's records; refuses to open without a log to read, saying why."""

    outputs = ("topic", "payload", "received_ms")

    def __init__(self, path: str, partitions: int, **kwargs: Any) -> None:
        super().__init__(path or ".", partitions, **kwargs)
        self.named = bool(path)

    def open(self, ctx: Context) -> None:
        if not self.named:
            raise ValueError(NO_LOG)
        if not self.path.exists():
            ctx.log.warning("the ingest log %s does not exist yet: waiting for it", self.path)
        super().open(ctx)


# -- the landing zone: exactly-once Parquet sinks ----------------------------------------


def land_readings(out: str, fields: Sequence[str] | None = None) -> partial[LandingSink]:
    """The sink of ``readings``: ``fields`` when rows arrive as a DSL record's value."""
    return partial(
        LandingSink, f"{out}/landing", "readings", event_time="ts", site="site", fields=fields
    )


def land_windows(out: str, fields: Sequence[str] | None = None) -> partial[LandingSink]:
    """The sink of ``sensor_windows``: each closed window once, dated by its start."""
    return partial(
        LandingSink,
        f"{out}/landing",
        "sensor_windows",
        event_time="window",
        site="site",
        fields=fields,
    )


def land_dead_letters(out: str) -> partial[LandingSink]:
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
