"""The Python floor: one process, the same batches and user functions, no runtime at all.

At a fixed rate (``BENCH_RATE``) it sleeps until records are due, like the others.

``python -m bench.iot.floor DATA OUT``: writes {"start", "end", ...summary} to OUT.
"""

from __future__ import annotations

import json
import sys
import time

from bench.iot.functions import (
    WINDOW_MS,
    add,
    event_ms,
    flag,
    latency_key,
    parse,
    sensor,
    summary,
    valid,
    zero,
)
from bench.peer_kit import RATE, Feed, write_arrivals


def main() -> None:
    data, out = sys.argv[1], sys.argv[2]
    feed = Feed(data)
    windows: dict[tuple[str, int], list[float]] = {}
    results = []
    times: list[float] = []  # at a fixed rate: when each result was made
    watermark = 0
    while (records := feed.take()) is not None:
        if not records:
            time.sleep(max(0.0, feed.due() - time.time()))
            continue
        for payload in records:
            r = parse(payload)
            if not valid(r):
                continue
            assert r is not None
            ts = event_ms(r)
            w = ts - ts % WINDOW_MS
            key = (sensor(r), w)
            acc = windows.get(key)
            if acc is None:
                acc = windows[key] = zero()
            add(acc, r)
            watermark = max(watermark, ts)
        closed = [k for k in windows if k[1] + WINDOW_MS <= watermark + 1]
        for k in closed:
            results.append(flag(k[0], k[1], windows.pop(k)))
        if RATE:
            times.extend(time.time() for _ in range(len(results) - len(times)))
    for k, acc in windows.items():  # the end of input closes the rest
        results.append(flag(k[0], k[1], acc))
    end = time.time()
    if RATE:
        times.extend(end for _ in range(len(results) - len(times)))
        write_arrivals(out + ".lat", [latency_key(r) for r in results], times)
    with open(out, "w") as f:
        json.dump({"start": feed.t0, "end": end, **summary(results)}, f)


if __name__ == "__main__":
    main()
