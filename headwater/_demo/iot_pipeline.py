"""The IoT pipeline: readings from the agent's durable log to per-site window aggregates.

    readings (LogSpout over the MQTT ingest log)
      -> parse      JSON -> [site, sensor, seq, ts, value]; bad input -> dead_letter stream
      -> dedup      per sensor: drop repeats (MQTT QoS 1 may deliver a reading twice)
      -> smooth     per sensor: exponentially weighted mean
      -> anomaly    per sensor: flag readings far from the running mean (Welford variance)
      -> windows    per sensor: 10 s event-time tumbling windows, closed by the sensor's clock
      -> site       per site: merge each sensor's closed windows into the site's window
      -> site_windows (KeyValueSink, latest row per site/window) and dead_letters (files)

Under a master, readings..anomaly run on every edge agent (``edge()``) and
the windows onwards in the cloud; ``headwater run`` runs it all locally.

Exactly once: every stateful step keeps its state in keyed state and the
topology runs EFFECTIVELY_ONCE. Configure with IOT_LOG (the ingest log) and
IOT_OUT (output folder).
"""

from __future__ import annotations

import json
import math
import os
from functools import partial

from headwater import Bolt, Context, Reliability, Stream, Topology, Tuple, fields
from headwater.common.connectors import KeyValueSink, LogSpout, TransactionalFileSink
from headwater.placement import edge

# on an agent, the ingest log is the agent's (HEADWATER_INGEST_LOG); IOT_LOG overrides
LOG = os.environ.get("IOT_LOG") or os.environ.get(
    "HEADWATER_INGEST_LOG", "/var/lib/headwater/agent/ingest"
)
OUT = os.environ.get("IOT_OUT", "/var/lib/headwater/iot")
PARTITIONS = int(os.environ.get("IOT_PARTITIONS", "1"))
WINDOW_MS = 10_000
ALPHA = 0.2  # smoothing factor
SIGMAS = 3.0  # anomaly threshold, in running standard deviations


class Parse(Bolt):
    """Decode and validate; anything malformed goes to ``dead_letter`` with the reason."""

    outputs = (
        Stream(("site", "sensor", "seq", "ts", "value")),
        Stream(("reason", "topic", "payload"), name="dead_letter"),
    )

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        topic, payload, _received = tup.values
        try:
            r = json.loads(payload)
            if not isinstance(r, dict):
                raise ValueError("a reading must be a JSON object")
            row = [r["site"], r["sensor"], r["seq"], r["ts"], r["value"]]
            if not all(isinstance(v, str) and v for v in row[:2]):
                raise ValueError("site and sensor must be non-empty strings")
            if not all(isinstance(v, int) and not isinstance(v, bool) and v >= 0
                       for v in row[2:4]):  # fmt: skip
                raise ValueError("seq and ts must be non-negative integers")
            if (
                not isinstance(row[4], int | float)
                or isinstance(row[4], bool)
                or not (math.isfinite(row[4]))
            ):
                raise ValueError("value must be a finite number")
        except KeyError as exc:
            self._dead(f"missing field {exc.args[0]!r}", topic, payload)
        except (ValueError, TypeError) as exc:  # JSONDecodeError is a ValueError
            self._dead(str(exc), topic, payload)
        else:
            row[4] = float(row[4])
            self.ctx.emit(row)

    def _dead(self, reason: str, topic: str, payload: bytes) -> None:
        self.ctx.incr("dead_letter")
        self.ctx.emit([reason, topic, payload[:1024].decode("utf-8", "replace")], "dead_letter")


class Dedup(Bolt):
    outputs = ("site", "sensor", "seq", "ts", "value")

    def open(self, ctx: Context) -> None:
        self.ctx, self.last = ctx, ctx.keyed_state("last_seq")

    def process(self, tup: Tuple) -> None:
        sensor, seq = tup.values[1], tup.values[2]
        if seq <= self.last.get(sensor, -1):
            self.ctx.incr("duplicates")
            return
        self.last[sensor] = seq
        self.ctx.emit(tup.values)


class Smooth(Bolt):
    outputs = ("site", "sensor", "seq", "ts", "value", "smoothed")

    def open(self, ctx: Context) -> None:
        self.ctx, self.ewma = ctx, ctx.keyed_state("ewma")

    def process(self, tup: Tuple) -> None:
        sensor, value = tup.values[1], tup.values[4]
        prev = self.ewma.get(sensor)
        smoothed = value if prev is None else prev + ALPHA * (value - prev)
        self.ewma[sensor] = smoothed
        self.ctx.emit([*tup.values, smoothed])


class Anomaly(Bolt):
    outputs = ("site", "sensor", "seq", "ts", "value", "smoothed", "anomaly")

    def open(self, ctx: Context) -> None:
        self.ctx, self.stats = ctx, ctx.keyed_state("welford")  # sensor -> [n, mean, m2]

    def process(self, tup: Tuple) -> None:
        sensor, value = tup.values[1], tup.values[4]
        n, mean, m2 = self.stats.get(sensor, (0, 0.0, 0.0))
        std = math.sqrt(m2 / (n - 1)) if n > 1 else 0.0
        anomaly = n >= 10 and abs(value - mean) > SIGMAS * std
        n += 1
        delta = value - mean
        mean += delta / n
        m2 += delta * (value - mean)
        self.stats[sensor] = (n, mean, m2)
        self.ctx.emit([*tup.values, anomaly])


class SensorWindows(Bolt):
    """10 s tumbling windows in event time, per sensor: a reading of a later window closes
    the open one (one sensor's readings arrive in order, so none is late)."""

    outputs = ("site", "sensor", "window", "count", "sum", "min", "max", "anomalies")

    def open(self, ctx: Context) -> None:
        self.ctx, self.open_windows = ctx, ctx.keyed_state("windows")

    def process(self, tup: Tuple) -> None:
        site, sensor, _seq, ts, value, _smoothed, anomaly = tup.values
        w = ts - ts % WINDOW_MS
        acc = self.open_windows.get(sensor)
        if acc is not None and acc[0] != w:
            self.ctx.emit([site, sensor, *acc])
            acc = None
        if acc is None:
            acc = [w, 0, 0.0, value, value, 0]
        self.open_windows[sensor] = [w, acc[1] + 1, acc[2] + value, min(acc[3], value),
                                     max(acc[4], value), acc[5] + int(anomaly)]  # fmt: skip


class SiteWindows(Bolt):
    """Merges sensors' closed windows into per-site windows; emits the merged row each time."""

    outputs = ("key", "site", "window", "sensors", "count", "mean", "min", "max", "anomalies")

    def open(self, ctx: Context) -> None:
        self.ctx, self.sites = ctx, ctx.keyed_state("site_windows")

    def process(self, tup: Tuple) -> None:
        site, _sensor, w, count, total, lo, hi, anomalies = tup.values
        key = f"{site}/{w}"
        s = self.sites.get(key, [0, 0, 0.0, lo, hi, 0])
        s = [s[0] + 1, s[1] + count, s[2] + total, min(s[3], lo), max(s[4], hi), s[5] + anomalies]
        self.sites[key] = s
        self.ctx.emit([key, site, w, s[0], s[1], round(s[2] / s[1], 6), s[3], s[4], s[5]])


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
    .add_bolt("dedup", Dedup, inputs={"parse": fields("sensor")}, placement=edge())
    .add_bolt("smooth", Smooth, inputs={"dedup": fields("sensor")}, placement=edge())
    .add_bolt("anomaly", Anomaly, inputs={"smooth": fields("sensor")}, placement=edge())
    # cloud: per-site windows across every agent
    .add_bolt("windows", SensorWindows, inputs={"anomaly": fields("sensor")})
    .add_bolt("site", SiteWindows, inputs={"windows": fields("site")})
    .add_bolt(
        "site_windows",
        partial(KeyValueSink, f"{OUT}/site_windows", key="key"),
        inputs={"site": fields("key")},
    )
    .add_bolt(
        "dead_letters",
        partial(TransactionalFileSink, f"{OUT}/dead_letters"),
        inputs={("parse", "dead_letter"): fields("topic")},
    )
)
