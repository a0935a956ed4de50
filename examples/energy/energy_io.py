"""Where the energy example reads and writes: its ingest log and its landing zone.

- the ingest log: ``ENERGY_LOG``, else (on an agent) the agent's own
  (``HEADWATER_INGEST_LOG``); with neither, the ``meter_log`` spout refuses to open,
  saying what to set;
- the landing zone: ``$ENERGY_OUT/landing`` (``ENERGY_OUT``, else ``./energy-out``),
  Parquet partitioned by the UTC date of the event time (``ts``) and the site::

    meters        every reading once, with its low_voltage flag and the prediction of
                  the example's model (``predicted_kwh``, ``model_version``) once one is
                  rolled out
    grid_events   the sags and recoveries the edge detected
    dead_letters  every refused record with its reason (the record as JSON text)
"""

from __future__ import annotations

import os
import sys
from functools import partial
from typing import Any

import pyarrow as pa

from headwater import Context
from headwater.connectors import LandingSink, LogSpout

NO_LOG = (
    "no ingest log to read: set ENERGY_LOG to the folder of a durable log of meter "
    "readings, or submit the topology to a master with agents, whose edge half reads the "
    "agent's own log"
)
# the columns of a reading and of a grid event, as the steps emit them
READING = ("meter_id", "site", "seq", "ts", "kwh", "voltage")
METERS = (*READING, "low_voltage")
GRID_EVENT = ("meter_id", "site", "ts", "kind", "voltage")
# the example's own model (``energy_model.py`` trains it; the pipeline's ``predict`` step
# scores each reading with the version rolled out to its agent): its input row, in order
MODEL = "energy-next-kwh"
MODEL_INPUTS = ("kwh", "voltage")
# a scored reading: the prediction of the meter's next kwh and the model version that made
# it (None and "" before a model is rolled out to the agent)
SCORED = (*METERS, "predicted_kwh", "model_version")
# the landed meters' column types, fixed here rather than by the first rows written: before
# the first rollout every prediction is None, which alone would make the column text
SCORED_SCHEMA = pa.schema(
    [
        ("meter_id", pa.string()),
        ("seq", pa.int64()),
        ("ts", pa.int64()),
        ("kwh", pa.float64()),
        ("voltage", pa.float64()),
        ("low_voltage", pa.bool_()),
        ("predicted_kwh", pa.float64()),
        ("model_version", pa.string()),
    ]
)


def ingest_log() -> str:
    """The ingest log's folder, or "" when none is named (said at once, on stderr)."""
    log = os.environ.get("ENERGY_LOG") or os.environ.get("HEADWATER_INGEST_LOG", "")
    if not log:
        print(f"ENERGY_LOG is not set: {NO_LOG}", file=sys.stderr)
    return log


def landing_root() -> str:
    """``$ENERGY_OUT/landing``, ``ENERGY_OUT`` defaulting to ``./energy-out`` (said once)."""
    out = os.environ.get("ENERGY_OUT")
    if not out:
        out = os.path.abspath("energy-out")
        print(f"ENERGY_OUT is not set: the energy example lands under {out}", file=sys.stderr)
    return os.path.join(out, "landing")


class MeterLog(LogSpout):
    """The ingest log's records ``[topic, payload, received_ms]``; refuses to open
    without a log to read, saying why."""

    outputs = ("topic", "payload", "received_ms")

    def __init__(self, path: str, partitions: int = 1, **kwargs: Any) -> None:
        super().__init__(path or ".", partitions, **kwargs)
        self.named = bool(path)

    def open(self, ctx: Context) -> None:
        if not self.named:
            raise ValueError(NO_LOG)
        super().open(ctx)


def land(root: str, dataset: str, schema: pa.Schema | None = None) -> partial[LandingSink]:
    """A landing sink of ``dataset``, dated by ``ts``, partitioned by site (its columns'
    types from ``schema`` when given, else from the first rows)."""
    return partial(LandingSink, root, dataset, event_time="ts", site="site", schema=schema)


def land_dead_letters(root: str) -> partial[LandingSink]:
    return partial(LandingSink, root, "dead_letters", event_time=dead_letter_time)


def dead_letter_time(row: dict[str, Any]) -> int | None:
    """A dead letter's event time, from its record (the same on replay): a raw reading's
    ``received_ms`` (``[topic, payload, received_ms]``), a parsed reading's ``ts``
    (``[meter_id, site, seq, ts, ...]``); else None (the null date)."""
    record = row.get("record")
    if not isinstance(record, list | tuple):
        return None
    at = 2 if len(record) == 3 else 3
    value = record[at] if len(record) > at else None
    ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**63
    return value if ok else None
