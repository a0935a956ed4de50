"""The energy example: smart meters on sites, from each site's agent to two landed datasets.

    ENERGY_LOG=log/ ENERGY_OUT=out/ headwater run examples/energy/energy_pipeline.py

A meter publishes ``{"meter_id", "site", "seq", "ts", "kwh", "voltage"}`` on
``meters/<site>/<meter_id>`` (``meters.py`` is such a publisher); an agent subscribed to
``meters/#`` keeps them in its durable ingest log.

    meter_log (the agent's durable MQTT ingest log)
      -> parse   JSON -> [meter_id, site, seq, ts, kwh, voltage]; bad input -> dead letters
      -> dedup   per meter: drop repeats (MQTT QoS 1 may deliver a reading twice)
      -> sag     per meter: flag readings below 207 V (low_voltage); emit a grid event
                 "sag" when a meter's voltage drops below it, "recover" when it is back
      -> predict the example's model (``energy_model.py`` trains it, ``headwater models
                 rollout`` ships it to the agents): each reading's next kwh from its
                 kwh and voltage, with the version that predicted it (none before the
                 first rollout: the readings flow unscored)
    predict's readings -> the landing, meters; sag's events -> the landing, grid_events;
    every component's dead letters -> the landing, dead_letters

Placement: parse..predict run on every edge agent (``edge()``), next to its broker and log;
the landing sinks run in the cloud. Exactly once: the topology runs EXACTLY_ONCE, the
per-meter state is keyed state (checkpointed with the stream), and the landing commits
what a checkpoint covered. The steps are in ``energy_steps.py``, the log and the landing
in ``energy_io.py``. Environment: ENERGY_LOG (the ingest log; on an agent, the agent's
own), ENERGY_OUT (where the landing goes, default ./energy-out).

The rest of the loop runs on Spark: ``rollup.toml`` (hourly and daily rollups of
``meters``) and ``daily_report.py`` (a job joining energy with sags); see README.md.
"""

from __future__ import annotations

from functools import partial
from typing import Any

import energy_steps as steps
from energy_io import (
    GRID_EVENT,
    METERS,
    MODEL,
    MODEL_INPUTS,
    READING,
    SCORED,
    SCORED_SCHEMA,
    MeterLog,
    ingest_log,
    land,
    land_dead_letters,
    landing_root,
)

from headwater import Bolt, Context, Reliability, Stream, Topology, Tuple, fields
from headwater.models import ScoreBolt
from headwater.placement import edge

LOG = ingest_log()
LANDING = landing_root()
EVENTS = "events"


class Parse(Bolt):
    """Decode and validate; ``steps.parse`` raises ``DeadLetter`` for malformed input."""

    outputs = READING

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        topic, payload, received_ms = tup.values
        self.ctx.emit(steps.parse(topic, payload, received_ms))


class Dedup(Bolt):
    """``steps.dedup`` per meter, the last seq in keyed state; counts ``duplicates``."""

    outputs = READING

    def open(self, ctx: Context) -> None:
        self.ctx, self.last = ctx, ctx.keyed_state("last_seq")

    def process(self, tup: Tuple) -> None:
        row = list(tup.values)
        self.last[row[0]], rows = steps.dedup(self.last.get(row[0]), row)
        if not rows:
            self.ctx.incr("duplicates")
        for r in rows:
            self.ctx.emit(r)


class Sag(Bolt):
    """``steps.sag`` per meter: the flagged reading on the default stream, its grid events
    on ``events``; counts ``sags``."""

    outputs = (Stream(METERS), Stream(GRID_EVENT, EVENTS))

    def open(self, ctx: Context) -> None:
        self.ctx, self.in_sag = ctx, ctx.keyed_state("in_sag")

    def process(self, tup: Tuple) -> None:
        row = list(tup.values)
        self.in_sag[row[0]], reading, events = steps.sag(self.in_sag.get(row[0]), row)
        self.ctx.emit(reading)
        for event in events:
            if event[3] == "sag":
                self.ctx.incr("sags")
            self.ctx.emit(event, stream=EVENTS)


def _by_meter(component: str) -> dict[Any, Any]:
    return {component: fields("meter_id")}


# the model's inputs as positions in a reading of METERS
PREDICT_INPUTS = [METERS.index(c) for c in MODEL_INPUTS]


topology = (
    Topology(
        "energy",
        config={
            "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
            "topology.stateful.checkpoint.interval.seconds": 1,
        },
    )
    # edge: on every agent (no selector), next to its broker and ingest log
    .add_spout("meter_log", partial(MeterLog, LOG), outputs=MeterLog.outputs, placement=edge())
    .add_bolt("parse", Parse, inputs={"meter_log": fields("topic")}, placement=edge())
    .add_bolt("dedup", Dedup, inputs=_by_meter("parse"), placement=edge())
    .add_bolt("sag", Sag, inputs=_by_meter("dedup"), placement=edge())
    .add_bolt(
        "predict",
        partial(ScoreBolt, MODEL, PREDICT_INPUTS),
        inputs=_by_meter("sag"),
        outputs=SCORED,
        config=ScoreBolt.config(MODEL, PREDICT_INPUTS),
        placement=edge(),
    )
    # cloud (the default): the landing zone
    .add_bolt("land_meters", land(LANDING, "meters", SCORED_SCHEMA), inputs=_by_meter("predict"))
    .add_bolt(
        "land_grid_events",
        land(LANDING, "grid_events"),
        inputs={("sag", EVENTS): fields("meter_id")},
    )
    .with_dead_letters("dead_letters", land_dead_letters(LANDING))
)
