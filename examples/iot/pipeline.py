"""The IoT pipeline: readings from the agent's durable log to per-site window aggregates.

    IOT_LOG=/path/to/ingest/log IOT_OUT=/path/to/out headwater run examples/iot/pipeline.py

(``headwater demo`` runs this file on a master, a worker and an agent per site.)

    readings (the agent's durable MQTT ingest log)
      -> parse      JSON -> [site, sensor, seq, ts, value]; bad input -> dead letters
      -> dedup      per sensor: drop repeats (MQTT QoS 1 may deliver a reading twice);
                    a seq implausibly far ahead -> dead letters
      -> smooth     per sensor: exponentially weighted mean
      -> anomaly    per sensor: flag readings far from the running mean (Welford variance),
                    or as the model rolled out to this agent says (``headwater models
                    rollout``); each row names the model version ("" for the hand-set rule)
      -> windows    per sensor: 10 s event-time tumbling windows, closed by the sensor's clock
      -> site       per site: merge each sensor's closed windows into the site's window
      -> site_windows (KeyValueSink, latest row per site/window)
    anomaly's readings, windows' closed windows, every component's dead letters
      -> the landing zone, $IOT_OUT/landing/{readings,sensor_windows,dead_letters}

Placement: under a master, readings..anomaly run on every edge agent (``edge()``),
next to its broker and log, and the windows onwards in the cloud; ``headwater run``
runs it all locally.

Exactly once: the topology runs EXACTLY_ONCE; every stateful step keeps its state in
keyed state (checkpointed with the stream) and the sinks commit what a checkpoint
covered. A step refuses a reading by raising ``DeadLetter`` (any other exception is
retried first): the runtime sends it, with the reason, to the topology's dead letters,
``[component, reason, traceback, record]`` rows, exactly once as any output.

The windows are the DSL's per-key windows (``window(..., clock="key")``) as a component,
``headwater.dsl.KeyClockWindowBolt``: each sensor's window closes on that sensor's first
reading of another window, whatever the other sensors' time, so a sensor lagging the
others (a gateway sending its backlog after an outage) has every reading counted in
exactly one closed window; ``pipeline_dsl.py`` runs the same windows as a DSL step.

The steps are plain functions in ``iot_steps.py``; the log, output folder and landing
sinks are in ``iot_io.py`` (both beside this file: ``headwater submit`` ships the
folder). ``pipeline_dsl.py`` is the same pipeline in the DSL. Environment: IOT_LOG
(the ingest log; on an agent, the agent's own), IOT_OUT (default ./iot-out),
IOT_PARTITIONS (the log's partitions, default 1).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from functools import partial
from typing import Any

import iot_steps as steps
from iot_io import Readings, ingest_log, land_dead_letters, land_readings, land_windows, out_dir

from headwater import Bolt, Context, Reliability, Topology, Tuple, fields
from headwater.connectors import KeyValueSink
from headwater.dsl import KeyClockWindowBolt, Tumbling
from headwater.models import live_model
from headwater.placement import edge, sites

LOG = ingest_log()
OUT = out_dir()
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
    """Runs one of ``steps``' keyed functions, ``fn(state, row) -> (state, rows)``, with
    each key's state in ``ctx.keyed_state`` (checkpointed: exactly once across failures).

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


class Anomaly(KeyedStep):
    """``steps.anomaly`` with the model its package ships for this agent, if any.

    Opening fails when that model does not load (a rollout shipping it rolls back).
    Counts ``scored`` and ``anomalies``: the rollout watches a canary's anomaly rate.
    """

    def __init__(self) -> None:
        super().__init__("welford", steps.anomaly, _sensor, None)

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        model, version = live_model(ctx.config)
        self.fn = partial(steps.anomaly, model=model, version=version)
        if model is not None:
            ctx.log.info("anomaly: model version %s", version)

    def process(self, tup: Tuple) -> None:
        key = self.key(tup.values)
        new, rows = self.fn(self.state.get(key), list(tup.values))
        self.state[key] = new
        for row in rows:
            self.ctx.incr("scored")
            if row[6]:
                self.ctx.incr("anomalies")
            self.ctx.emit(row)


def _sensor(row: list[Any]) -> Any:
    return row[1]


def _step(
    name: str, fn: Any, key: Callable[[list[Any]], Any] = _sensor, dropped: str | None = None
) -> Any:
    return partial(KeyedStep, name, fn, key, dropped)


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
        Anomaly,
        inputs={"smooth": fields("sensor")},
        outputs=(*SENSOR_ROW, "smoothed", "anomaly", "model"),
        placement=edge(),
    )
    # cloud (the default): per-site windows across every agent
    .add_bolt(
        "windows",
        partial(
            KeyClockWindowBolt,
            "windows",
            Tumbling(steps.WINDOW_MS),
            key=_sensor,
            timestamp=steps.reading_ts,
            zero=steps.window_zero,
            add=steps.window_add,
            result=steps.window_row,
        ),
        inputs={"anomaly": fields("sensor")},
        outputs=("site", "sensor", "window", "count", "sum", "min", "max", "anomalies"),
        config=sites("site"),  # a sensor's readings name its site: windows may move (issue 37)
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
    # the landing zone, in the cloud: every reading with its flag, every closed window
    .add_bolt("land_readings", land_readings(OUT), inputs={"anomaly": fields("sensor")})
    .add_bolt("land_windows", land_windows(OUT), inputs={"windows": fields("sensor")})
    # every component's dead letters (malformed input, implausible readings, and records
    # user code kept raising on), in the cloud, with the reason
    .with_dead_letters("dead_letters", land_dead_letters(OUT))
)
