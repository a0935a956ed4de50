"""The IoT pipeline: readings from the agent's durable log to per-site window aggregates.

    readings (LogSpout over the MQTT ingest log)
      -> parse      JSON -> [site, sensor, seq, ts, value]; bad input -> dead letters
      -> dedup      per sensor: drop repeats (MQTT QoS 1 may deliver a reading twice);
                    a seq implausibly far ahead -> dead letters
      -> smooth     per sensor: exponentially weighted mean
      -> anomaly    per sensor: flag readings far from the running mean (Welford variance)
      -> windows    per sensor: 10 s event-time tumbling windows, closed by the sensor's clock
      -> site       per site: merge each sensor's closed windows into the site's window
      -> site_windows (KeyValueSink, latest row per site/window)
    every component's dead letters -> dead_letters (files, in the cloud)

Under a master, readings..anomaly run on every edge agent (``edge()``) and
the windows onwards in the cloud; ``headwater run`` runs it all locally.

Exactly once: every stateful step keeps its state in keyed state and the
topology runs EFFECTIVELY_ONCE. A step refuses a reading by raising
``DeadLetter`` (any other exception is retried first): the runtime sends it,
with the reason, to the topology's dead letters, ``[component, reason,
traceback, record]`` rows, exactly once as any output. Configure with IOT_LOG (the ingest log) and
IOT_OUT (output folder).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater._demo import iot_steps as steps
from headwater.common.connectors import KeyValueSink, LogSpout, TransactionalFileSink
from headwater.placement import edge

# on an agent, the ingest log is the agent's (HEADWATER_INGEST_LOG); IOT_LOG overrides
LOG = os.environ.get("IOT_LOG") or os.environ.get(
    "HEADWATER_INGEST_LOG", "/var/lib/headwater/agent/ingest"
)
OUT = os.environ.get("IOT_OUT", "/var/lib/headwater/iot")
PARTITIONS = int(os.environ.get("IOT_PARTITIONS", "1"))
SENSOR_ROW = ("site", "sensor", "seq", "ts", "value")


class Parse(Bolt):
    """Decode and validate; ``steps.parse`` raises ``DeadLetter`` for malformed input."""

    outputs = SENSOR_ROW

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        topic, payload, received_ms = tup.values
        self.ctx.emit(steps.parse(topic, payload, received_ms))


class KeyedStep(Bolt):
    """Runs one of ``steps``' keyed functions with its state in ``ctx.keyed_state``.

    ``dropped`` names a user counter for the records the function drops.
    """

    def __init__(
        self,
        name: str,
        fn: Callable[[Any, list[Any]], tuple[Any, list[list[Any]]]],
        key: Callable[[list[Any]], Any],
        dropped: str | None,
    ) -> None:
        self.name, self.fn, self.key, self.dropped = name, fn, key, dropped

    def open(self, ctx: Context) -> None:
        self.ctx, self.state = ctx, ctx.keyed_state(self.name)

    def process(self, tup: Tuple) -> None:
        key = self.key(tup.values)
        new, rows = self.fn(self.state.get(key), list(tup.values))
        self.state[key] = new
        if not rows and self.dropped:
            self.ctx.incr(self.dropped)
        for row in rows:
            self.ctx.emit(row)


def _sensor(row: list[Any]) -> Any:
    return row[1]


def _step(
    name: str, fn: Any, key: Callable[[list[Any]], Any] = _sensor, dropped: str | None = None
) -> Any:
    return partial(KeyedStep, name, fn, key, dropped)


class Readings(LogSpout):
    outputs = ("topic", "payload", "received_ms")


topology = (
    Topology(
        "iot",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 1,
        },
    )
    # edge: on every agent (no selector), next to its broker and ingest log
    .add_spout(
        "readings",
        partial(Readings, LOG, partitions=PARTITIONS),
        outputs=Readings.outputs,
        placement=edge(),
    )
    .add_bolt("parse", Parse, inputs={"readings": fields("topic")}, placement=edge())
    .add_bolt(
        "dedup",
        _step("last_seq", steps.dedup, dropped="duplicates"),
        inputs={"parse": fields("sensor")},
        outputs=SENSOR_ROW,
        placement=edge(),
    )
    .add_bolt(
        "smooth",
        _step("ewma", steps.smooth),
        inputs={"dedup": fields("sensor")},
        outputs=(*SENSOR_ROW, "smoothed"),
        placement=edge(),
    )
    .add_bolt(
        "anomaly",
        _step("welford", steps.anomaly),
        inputs={"smooth": fields("sensor")},
        outputs=(*SENSOR_ROW, "smoothed", "anomaly"),
        placement=edge(),
    )
    # cloud: per-site windows across every agent
    .add_bolt(
        "windows",
        _step("windows", steps.sensor_window),
        inputs={"anomaly": fields("sensor")},
        outputs=("site", "sensor", "window", "count", "sum", "min", "max", "anomalies"),
    )
    .add_bolt(
        "site",
        _step("site_windows", steps.site_window, steps.site_key),
        inputs={"windows": fields("site")},
        outputs=("key", "site", "window", "sensors", "count", "mean", "min", "max", "anomalies"),
    )
    .add_bolt(
        "site_windows",
        partial(KeyValueSink, f"{OUT}/site_windows", key="key"),
        inputs={"site": fields("key")},
    )
    # every component's dead letters (malformed input, implausible readings, and records
    # user code kept raising on), in the cloud, with the reason
    .with_dead_letters("dead_letters", partial(TransactionalFileSink, f"{OUT}/dead_letters"))
)
