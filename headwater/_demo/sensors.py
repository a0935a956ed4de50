"""The simulated sensors' readings: deterministic, so tests recompute results offline.

Each reading: {"site", "sensor", "seq", "ts" (epoch ms), "value", "unit"} on topic
``sensors/<site>/<sensor>``. Every site has a profile of its own (base temperature,
amplitude, period and phase of its wave, noise), drawn from a generator seeded with its
name, and its own anomaly positions (``injected``): the same seq gives the same reading,
and two sites never move in step. ``headwater sensors`` publishes them over MQTT.
"""

from __future__ import annotations

import functools
import math
import random
import zlib
from collections.abc import Iterator
from typing import Any

BASE_TS = 1_700_000_000_000  # ``readings()``' default start: a fixed epoch ms, deterministic
ANOMALY_EVERY = 37  # one reading in 37 of each sensor is injected hot (+15)


@functools.cache
def _profile(site: int) -> tuple[float, float, float, float, float]:
    """Site ``site``'s (base, amplitude, period in readings, phase, noise), seeded by name."""
    rng = random.Random(f"headwater-site{site}")
    return (
        round(14 + 12 * rng.random(), 2),
        round(2 + 5 * rng.random(), 2),
        round(30 + 40 * rng.random(), 2),
        round(2 * math.pi * rng.random(), 3),
        round(0.2 + 1.2 * rng.random(), 2),
    )


def _noise(site: int, k: int, seq: int) -> float:
    """A deterministic draw in [-1, 1) for one reading."""
    return zlib.crc32(f"{site}/{k}/{seq}".encode()) / 2**31 - 1


def _value(site: int, k: int, seq: int) -> float:
    """Sensor ``k`` of site ``site``'s reading number ``seq``: the site's wave, offset per
    sensor, with noise; an injected anomaly adds 15."""
    base, amplitude, period, phase, noise = _profile(site)
    wave = amplitude * math.sin(2 * math.pi * seq / period + phase + 0.6 * k)
    hot = 15 if injected(f"site{site}", seq) else 0
    return base + 0.5 * k + wave + noise * _noise(site, k, seq) + hot


def reading(site: int, k: int, seq: int, ts: int) -> tuple[str, dict[str, Any]]:
    """(topic, reading) of sensor ``k`` of site ``site``, reading ``seq`` stamped ``ts``."""
    name, sensor = f"site{site}", f"s{site}-{k}"
    return f"sensors/{name}/{sensor}", {
        "site": name,
        "sensor": sensor,
        "seq": seq,
        "ts": ts,
        "value": round(_value(site, k, seq), 3),
        "unit": "C",
    }


def readings(
    sites: int,
    per_site: int,
    count: int,
    step_ms: int = 1000,
    first: int = 0,
    base_ts: int = BASE_TS,
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(topic, reading) for ``count`` readings per sensor from seq ``first``, ``step_ms``
    apart in event time from ``base_ts`` (seq 0's ts; a large step covers hours or days
    with few readings), interleaved."""
    for seq in range(first, first + count):
        for s in range(sites):
            for k in range(per_site):
                yield reading(s, k, seq, base_ts + seq * step_ms)


def injected(site: str, seq: int) -> bool:
    """The truth of the example: ``readings()`` injects an anomaly (+15) where this holds,
    one reading in 37 of each sensor, at positions of the site's own.

    ``headwater spark train``'s default ``--labels`` (per landed row, by its site and seq).
    """
    return (seq + zlib.crc32(site.encode())) % ANOMALY_EVERY == 11
