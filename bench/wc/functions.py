"""Word count's user code and data, shared by every runner.

sentences -> split into words -> key by word -> running count per word ->
sink. The data is a file of msgpack batches of sentences drawn from a fixed
vocabulary, so every runner decodes the same batches and calls these
functions; the sink sees one (word, count) per word occurrence.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import msgpack

BATCH = 500
WORDS_PER_SENTENCE = 10
VOCABULARY = [f"w{i:04d}" for i in range(5000)]


def make_data(path: Path, n: int, seed: int = 11) -> None:
    """``n`` sentences in batches of BATCH."""
    rng = random.Random(seed)
    with open(path, "wb") as f:
        pack = msgpack.Packer(use_bin_type=True).pack
        for start in range(0, n, BATCH):
            f.write(pack([" ".join(rng.choices(VOCABULARY, k=WORDS_PER_SENTENCE))
                          for _ in range(start, min(n, start + BATCH))]))  # fmt: skip


def split(sentence: str) -> list[str]:
    return sentence.split()


def count(total: int | None, _word: str) -> int:
    return 1 if total is None else total + 1


def summary(results: Iterable[tuple[str, int]]) -> dict[str, Any]:
    """What every runner must agree on: records at the sink and the final counts."""
    final: dict[str, int] = {}
    n = 0
    for word, c in results:
        n += 1
        if c > final.get(word, 0):
            final[word] = c
    return {"records": n, "distinct": len(final), "total": sum(final.values())}
