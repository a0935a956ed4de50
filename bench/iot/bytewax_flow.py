"""The IoT pipeline on Bytewax: ``python -m bytewax.run bench.iot.bytewax_flow:flow``.

Run as one process, or as two (``-i 0|1 -a HOST:PORT;HOST:PORT``): each worker's
sink writes its share of the results to ``BENCH_OUT.wN``.

The same batches and user functions; an event-time tumbling window
(``fold_window`` with an ``EventClock``) per sensor.
"""

from __future__ import annotations

import json
import os
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import bytewax.operators as op
import bytewax.operators.windowing as win
from bytewax.dataflow import Dataflow
from bytewax.inputs import FixedPartitionedSource, StatefulSourcePartition
from bytewax.outputs import DynamicSink, StatelessSinkPartition

from bench.iot.functions import (
    WINDOW_MS,
    add,
    event_ms,
    flag,
    merge,
    parse,
    read_batches,
    sensor,
    summary,
    valid,
    zero,
)

DATA = os.environ.get("BENCH_DATA", "/nonexistent")
OUT = os.environ.get("BENCH_OUT", "/nonexistent")
ALIGN = datetime(2023, 1, 1, tzinfo=UTC)  # a multiple of 10 s since the epoch
ALIGN_MS = int(ALIGN.timestamp() * 1000)


class _Readings(StatefulSourcePartition[bytes, None]):
    def __init__(self) -> None:
        self.batches = read_batches(DATA)
        self.started = False

    def next_batch(self) -> list[bytes]:
        batch = next(self.batches, None)
        if batch is None:
            raise StopIteration
        if not self.started:
            self.started = True
            with open(OUT + ".start", "w") as f:
                f.write(repr(time.time()))
        return batch

    def snapshot(self) -> None:
        return None


class Readings(FixedPartitionedSource[bytes, None]):
    def list_parts(self) -> list[str]:
        return ["0"]

    def build_part(self, step_id: str, for_part: str, resume_state: None) -> _Readings:
        return _Readings()


class _Collect(StatelessSinkPartition[Any]):
    """One per worker: writes its share of the results to ``OUT.wN`` at the end."""

    def __init__(self, worker: int) -> None:
        self.worker = worker
        self.results: list[Any] = []

    def write_batch(self, items: list[Any]) -> None:
        self.results.extend(items)

    def close(self) -> None:
        with open(f"{OUT}.w{self.worker}", "w") as f:
            json.dump({"end": time.time(), **summary(self.results)}, f)


class Collect(DynamicSink[Any]):
    def build(self, step_id: str, worker_index: int, worker_count: int) -> _Collect:
        return _Collect(worker_index)


def _ts(r: dict[str, Any]) -> datetime:
    return datetime.fromtimestamp(event_ms(r) / 1000, tz=UTC)


flow = Dataflow("iotbench")
readings = op.input("readings", flow, Readings())
valid_readings = op.filter("valid", op.map("parse", readings, parse), valid)
keyed = op.key_on("sensor", valid_readings, sensor)  # type: ignore[arg-type]
clock = win.EventClock(_ts, wait_for_system_duration=timedelta(0))
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
op.output("out", flagged, Collect())
