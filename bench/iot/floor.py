"""The Python floor: one process, the same batches and user functions, no runtime at all.

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
    parse,
    sensor,
    summary,
    valid,
    zero,
)
from bench.peer_kit import read_batches


def main() -> None:
    data, out = sys.argv[1], sys.argv[2]
    start = time.time()
    windows: dict[tuple[str, int], list[float]] = {}
    results = []
    watermark = 0
    for batch in read_batches(data):
        for payload in batch:
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
    for k, acc in windows.items():  # the end of input closes the rest
        results.append(flag(k[0], k[1], acc))
    end = time.time()
    with open(out, "w") as f:
        json.dump({"start": start, "end": end, **summary(results)}, f)


if __name__ == "__main__":
    main()
