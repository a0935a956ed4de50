"""The Python floor for word count: ``python -m bench.wc.floor DATA OUT``."""

from __future__ import annotations

import json
import sys
import time

from bench.peer_kit import RATE, Feed, write_arrivals
from bench.wc.functions import count, latency_key, split, summary


def main() -> None:
    data, out = sys.argv[1], sys.argv[2]
    feed = Feed(data)
    totals: dict[str, int] = {}
    results = []
    times: list[float] = []  # at a fixed rate: when each result was made
    while (records := feed.take()) is not None:
        if not records:
            time.sleep(max(0.0, feed.due() - time.time()))
            continue
        for sentence in records:
            for word in split(sentence):
                c = totals[word] = count(totals.get(word), word)
                results.append((word, c))
        if RATE:
            times.extend(time.time() for _ in range(len(results) - len(times)))
    end = time.time()
    if RATE:
        write_arrivals(out + ".lat", [latency_key(r) for r in results], times)
    with open(out, "w") as f:
        json.dump({"start": feed.t0, "end": end, **summary(results)}, f)


if __name__ == "__main__":
    main()
