"""The IoT example's parse and dedup, and a step that raises on one sensor, in any mode.

    readings (the ingest log) -> parse -> dedup (per sensor) -> check -> out
    every component's (or step's) dead letters -> dead_letters

``POISON_API``: ``components`` (bolts) or ``dsl`` (fused steps); ``POISON_MODE``:
the reliability mode. ``check`` raises ``ValueError`` on every reading of
``POISON_SENSOR``; with ``POISON_FLAKY`` set, it raises ``RuntimeError`` on the first
attempt at reading 5 of sensor s0-0 in each process (a retry then works). Under
exactly-once the sinks are transactional; otherwise they append to ``part-*.jsonl``
(and ack) at once. Under at-least-once the source tracks every record and replays
what fails (counted as ``replayed``).
"""

from __future__ import annotations

import json
import os
import sys
from functools import partial
from pathlib import Path
from typing import Any

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.common.connectors import LogSpout, TransactionalFileSink
from headwater.dsl import Pipeline

# the IoT example's steps (run locally only: the repository's examples/iot)
sys.path.append(str(Path(__file__).resolve().parents[3] / "examples" / "iot"))
import iot_steps as steps

LOG = os.environ.get("IOT_LOG", "/nonexistent")
OUT = os.environ.get("IOT_OUT", "/nonexistent")
API = os.environ.get("POISON_API", "components")
MODE = Reliability(os.environ.get("POISON_MODE", Reliability.EXACTLY_ONCE.value))
SENSOR = os.environ.get("POISON_SENSOR", "s1-2")
FLAKY = bool(os.environ.get("POISON_FLAKY"))
_attempted: set[tuple[str, int]] = set()
ROW = ("site", "sensor", "seq", "ts", "value")
CONFIG = {
    "topology.reliability.mode": MODE.value,
    "topology.stateful.checkpoint.interval.seconds": 1,
    # no tuple times out on a loaded machine: every replay here is one a failure asked for
    "topology.message.timeout.secs": 60,
}


def check(row: list[Any]) -> list[Any]:
    if row[1] == SENSOR:
        raise ValueError(f"sensor {row[1]} is broken")
    if FLAKY and (row[1], row[2]) == ("s0-0", 5) and (row[1], row[2]) not in _attempted:
        _attempted.add((row[1], row[2]))
        raise RuntimeError("the first attempt fails")
    return row


class Readings(LogSpout):
    """The ingest log; under at-least-once each record is tracked and replayed on failure."""

    outputs = ("topic", "payload", "received_ms")

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.real = ctx
        self.pending: dict[int, list[Any]] = {}
        if MODE is Reliability.AT_LEAST_ONCE:
            self.ctx = _Tracking(ctx, self.pending)  # type: ignore[assignment]

    def on_ack(self, tup_id: Any) -> None:
        self.pending.pop(tup_id, None)

    def on_fail(self, tup_id: Any) -> None:
        self.real.incr("replayed")
        self.real.emit(self.pending[tup_id], tup_id=tup_id)


class _Tracking:
    """The spout's context, but every emit is tracked (``tup_id``) and kept for a replay."""

    def __init__(self, ctx: Context, pending: dict[int, list[Any]]) -> None:
        self._ctx, self._pending, self._ids = ctx, pending, 0

    def emit(self, values: list[Any], stream: str = "default", **_: Any) -> None:
        self._ids += 1
        self._pending[self._ids] = values
        self._ctx.emit(values, tup_id=self._ids)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class AppendSink(Bolt):
    """Appends each tuple as a JSON line to ``part-0-<task>.jsonl`` at once, and acks it."""

    def __init__(self, directory: str) -> None:
        self.dir = directory

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        os.makedirs(self.dir, exist_ok=True)
        path = os.path.join(self.dir, f"part-0-{ctx.task_id}.jsonl")
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    def process(self, tup: Tuple) -> None:
        line = json.dumps(tup.values, default=lambda b: b.decode("utf-8", "replace")) + "\n"
        os.write(self.fd, line.encode())
        self.ctx.ack(tup)

    def close(self) -> None:
        os.close(self.fd)


def sink(name: str) -> Any:
    if MODE is Reliability.EXACTLY_ONCE:
        return partial(TransactionalFileSink, f"{OUT}/{name}")
    return partial(AppendSink, f"{OUT}/{name}")


class Step(Bolt):
    """Runs ``fn`` on each tuple's values, anchored and acked; keyed ones keep state."""

    def __init__(self, fn: Any, keyed: str | None = None) -> None:
        self.fn, self.keyed = fn, keyed

    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.state = ctx.keyed_state(self.keyed) if self.keyed else None

    def process(self, tup: Tuple) -> None:
        values = list(tup.values)
        if self.state is None:
            rows = [self.fn(values)]
        else:
            new, rows = self.fn(self.state.get(values[1]), values)
            self.state[values[1]] = new
        for row in rows:
            self.ctx.emit(row, anchors=[tup])
        self.ctx.ack(tup)


def _parse(record: list[Any]) -> list[Any]:
    return steps.parse(*record)


def _components() -> Topology:
    return (
        Topology("poison", config=CONFIG)
        .add_spout("readings", partial(Readings, LOG, partitions=2), outputs=Readings.outputs)
        .add_bolt("parse", partial(Step, _parse), inputs={"readings": fields("topic")}, outputs=ROW)
        .add_bolt(
            "dedup",
            partial(Step, steps.dedup, "last_seq"),
            inputs={"parse": fields("sensor")},
            outputs=ROW,
        )
        .add_bolt("check", partial(Step, check), inputs={"dedup": fields("sensor")}, outputs=ROW)
        .add_bolt("out", sink("out"), inputs={"check": fields("sensor")})
        .with_dead_letters("dead_letters", sink("dead_letters"))
    )


def _dsl() -> Topology:
    p = Pipeline("poison", config=CONFIG)
    (
        p.source("readings", partial(Readings, LOG, partitions=2))
        .map("parse", _parse)
        .key_by("by_sensor", lambda row: row[1])
        .flat_map_by_key("dedup", steps.dedup)
        .map("check", check)
        .to("out", sink("out"))
    )
    p.dead_letters("dead_letters", sink("dead_letters"))
    return p.build()


topology = _dsl() if API == "dsl" else _components()
