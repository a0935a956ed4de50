"""The IoT pipeline's user code and data, shared by every runner.

parse JSON -> validate -> key by sensor -> 10 s event-time tumbling window
statistics -> anomaly flag -> sink. The data is a file of msgpack batches of
JSON payloads (1% malformed), in event-time order, so every runner decodes
the same batches and calls these same functions.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import msgpack

from headwater.dsl import partition_of

WINDOW_MS = 10_000
BASE_TS = 1_700_000_000_000
STEP_MS = 5  # event time advances 5 ms per reading: 2,000 readings per window
SENSORS = 100
BATCH = 1000


def make_data(path: Path, n: int, seed: int = 7) -> None:
    """``n`` readings in batches of BATCH (msgpack lists of JSON bytes)."""
    rng = random.Random(seed)
    with open(path, "wb") as f:
        pack = msgpack.Packer(use_bin_type=True).pack
        for start in range(0, n, BATCH):
            batch = []
            for i in range(start, min(n, start + BATCH)):
                if rng.random() < 0.01:
                    batch.append(b'{"sensor": "x", "ts": ')  # malformed
                    continue
                value = rng.gauss(20.0, 2.0) + (40.0 if rng.random() < 0.001 else 0.0)
                ts = BASE_TS + i * STEP_MS
                r = {
                    "site": "s0",
                    "sensor": f"t{i % SENSORS}",
                    "seq": i,
                    "ts": ts,
                    "value": round(value, 3),
                }
                batch.append(json.dumps(r).encode())
            f.write(pack(batch))


def parse(payload: bytes) -> dict[str, Any] | None:
    try:
        r = json.loads(payload)
    except ValueError:
        return None
    return r if isinstance(r, dict) else None


def valid(r: dict[str, Any] | None) -> bool:
    if r is None:
        return False
    v, ts = r.get("value"), r.get("ts")
    return (
        isinstance(r.get("sensor"), str)
        and isinstance(ts, int)
        and ts >= 0
        and isinstance(v, int | float)
        and math.isfinite(v)
    )


def sensor(r: dict[str, Any]) -> str:
    return str(r["sensor"])


def event_ms(r: dict[str, Any]) -> int:
    return int(r["ts"])


def zero() -> list[float]:
    return [0, 0.0, math.inf, -math.inf]  # count, sum, min, max


def add(acc: list[float], r: dict[str, Any]) -> list[float]:
    v = r["value"]
    acc[0] += 1
    acc[1] += v
    acc[2] = min(acc[2], v)
    acc[3] = max(acc[3], v)
    return acc


def merge(a: list[float], b: list[float]) -> list[float]:
    return [a[0] + b[0], a[1] + b[1], min(a[2], b[2]), max(a[3], b[3])]


def flag(key: str, start: int, acc: list[float]) -> tuple[str, int, int, float, bool]:
    """A window's statistics and whether its peak is an anomaly (20 above its mean)."""
    mean = acc[1] / acc[0]
    return key, start, int(acc[0]), round(mean, 6), acc[3] - mean > 20.0


def latency_key(result: tuple[str, int, int, float, bool]) -> int:
    """What a sink notes of a result for latency: its window's start."""
    return result[1]


def arrival_index(data: Path, n: int) -> Callable[[int], int]:
    """The reading whose arrival closes the window starting at ``start`` (the first at or
    past its end; the last reading for the windows the end of input closes)."""
    return lambda start: min((start + WINDOW_MS - BASE_TS) // STEP_MS, n - 1)


def summary(results: list[tuple[str, int, int, float, bool]]) -> dict[str, Any]:
    """What every runner must agree on."""
    return {
        "records": len(results),
        "readings": sum(r[2] for r in results),
        "anomalies": sum(1 for r in results if r[4]),
    }


def split_data(path: Path, parts: int) -> list[int]:
    """Split the data by sensor into ``path.p0`` .. (``partition_of(sensor, parts)``, as a
    key-partitioned log would hold it; a malformed reading goes by its position), keeping
    each batch's order; returns each part's number of results (its sensors' windows)."""
    windows: list[set[tuple[str, int]]] = [set() for _ in range(parts)]
    pack = msgpack.Packer(use_bin_type=True).pack
    with ExitStack() as stack, open(path, "rb") as f:
        files = [stack.enter_context(open(f"{path}.p{i}", "wb")) for i in range(parts)]
        for batch in msgpack.Unpacker(f, raw=False, use_list=True):
            subs: list[list[bytes]] = [[] for _ in range(parts)]
            for k, payload in enumerate(batch):
                r = parse(payload)
                if r is not None and valid(r):
                    p = partition_of(sensor(r), parts)
                    windows[p].add((sensor(r), event_ms(r) // WINDOW_MS))
                else:
                    p = k % parts
                subs[p].append(payload)
            for out, sub in zip(files, subs, strict=True):
                if sub:
                    out.write(pack(sub))
    return [len(w) for w in windows]
