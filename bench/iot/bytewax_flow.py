"""The IoT pipeline on Bytewax: ``python -m bytewax.run bench.iot.bytewax_flow:flow``.

Run as one process, or as several (``-i I -a HOST:PORT;HOST:PORT;...``): each worker's
sink writes its share of the results to ``BENCH_OUT.wN``.

The same batches and user functions; an event-time tumbling window
(``fold_window`` with an ``EventClock``) per sensor.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from typing import Any

import bytewax.operators as op
import bytewax.operators.windowing as win
from bytewax.dataflow import Dataflow

from bench.iot.functions import (
    WINDOW_MS,
    add,
    event_ms,
    flag,
    latency_key,
    merge,
    parse,
    sensor,
    summary,
    valid,
    zero,
)
from bench.peer_bytewax import BatchSource, Collect

ALIGN = datetime(2023, 1, 1, tzinfo=UTC)  # a multiple of 10 s since the epoch
ALIGN_MS = int(ALIGN.timestamp() * 1000)


def _ts(r: dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(event_ms(r) / 1000, tz=UTC)


flow = Dataflow("iotbench")
readings = op.input("readings", flow, BatchSource())
valid_readings = op.filter("valid", op.map("parse", readings, parse), valid)
keyed = op.key_on("sensor", valid_readings, sensor)  # type: ignore[arg-type]
# how long a worker waits for late readings (another worker's, through the exchange)
WAIT = timedelta(milliseconds=float(os.environ.get("BENCH_BYTEWAX_WAIT_MS", "0")))
clock = win.EventClock(_ts, wait_for_system_duration=WAIT)
windower = win.TumblingWindower(length=timedelta(milliseconds=WINDOW_MS), align_to=ALIGN)
windows: win.WindowOut[dict[str, Any], list[float]] = win.fold_window(
    "window",
    keyed,  # type: ignore[arg-type]  # the filter leaves no None, which mypy cannot see
    clock,
    windower,
    zero,
    add,
    merge,
)
flagged = op.map(
    "flag", windows.down, lambda kv: flag(kv[0], ALIGN_MS + kv[1][0] * WINDOW_MS, kv[1][1])
)
op.output("out", flagged, Collect(summary, latency_key))
