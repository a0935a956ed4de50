"""The Python floor for word count: ``python -m bench.wc.floor DATA OUT``."""

from __future__ import annotations

import json
import sys
import time

from bench.peer_kit import read_batches
from bench.wc.functions import count, split, summary


def main() -> None:
    data, out = sys.argv[1], sys.argv[2]
    start = time.time()
    totals: dict[str, int] = {}
    results = []
    for batch in read_batches(data):
        for sentence in batch:
            for word in split(sentence):
                c = totals[word] = count(totals.get(word), word)
                results.append((word, c))
    end = time.time()
    with open(out, "w") as f:
        json.dump({"start": start, "end": end, **summary(results)}, f)


if __name__ == "__main__":
    main()
