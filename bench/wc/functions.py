"""Word count's user code and data, shared by every runner.

sentences -> split into words -> key by word -> running count per word ->
sink. The data is a file of msgpack batches of sentences drawn from a fixed
vocabulary, so every runner decodes the same batches and calls these
functions; the sink sees one (word, count) per word occurrence.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable
from contextlib import ExitStack
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
            f.write(
                pack(
                    [
                        " ".join(rng.choices(VOCABULARY, k=WORDS_PER_SENTENCE))
                        for _ in range(start, min(n, start + BATCH))
                    ]
                )
            )


def split_data(path: Path, parts: int) -> list[int]:
    """Deal the sentences out to ``path.p0`` .. in turn (as an unkeyed log's partitions
    would hold them), keeping each batch's order; returns each part's number of results:
    the occurrences of the words ``partition_of`` gives to the counting task of that
    index (every count is made on its word's task, whichever file the sentence is in)."""
    from headwater.dsl import partition_of

    part = {w: partition_of(w, parts) for w in VOCABULARY}
    results = [0] * parts
    pack = msgpack.Packer(use_bin_type=True).pack
    with ExitStack() as stack, open(path, "rb") as f:
        files = [stack.enter_context(open(f"{path}.p{i}", "wb")) for i in range(parts)]
        for batch in msgpack.Unpacker(f, raw=False, use_list=True):
            for i, out in enumerate(files):
                if sub := batch[i::parts]:
                    out.write(pack(sub))
            for sentence in batch:
                for word in split(sentence):
                    results[part[word]] += 1
    return results


def split(sentence: str) -> list[str]:
    return sentence.split()


def one(word: str) -> tuple[str, int]:
    """Headwater's pipeline: each word as a partial count..."""
    return word, 1


def add_counts(a: tuple[str, int], b: tuple[str, int]) -> tuple[str, int]:
    """...summed per word by ``reduce_by_key``."""
    return a[0], a[1] + b[1]


def count(total: int | None, _word: str) -> int:
    return 1 if total is None else total + 1


def latency_key(result: tuple[str, int]) -> tuple[str, int]:
    """What a sink notes of a result for latency: (word, count)."""
    return result


def arrival_index(data: Path, n: int) -> Callable[[tuple[str, int]], int]:
    """The sentence holding the ``count``-th occurrence of ``word``."""
    seen: dict[str, list[int]] = {}
    i = 0
    with open(data, "rb") as f:
        for batch in msgpack.Unpacker(f, raw=False):
            for sentence in batch:
                for word in split(sentence):
                    seen.setdefault(word, []).append(i)
                i += 1
    return lambda key: seen[key[0]][key[1] - 1]


def summary(results: Iterable[tuple[str, int]]) -> dict[str, Any]:
    """What every runner must agree on: records at the sink and the final counts."""
    final: dict[str, int] = {}
    n = 0
    for word, c in results:
        n += 1
        if c > final.get(word, 0):
            final[word] = c
    return {"records": n, "distinct": len(final), "total": sum(final.values())}
