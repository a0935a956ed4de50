"""Heron's word-count streamlet, written fresh: only the import prefix differs from heronpy.

headwater run examples/heron/streamlet_word_count.py --duration 30 -- WordCountStreamlet

The source sleeps between sentences, as Heron's ``ArrayLooper(..., sleep=...)`` does.
For a checkable run, ``HERON_EXAMPLE_LIMIT`` ends the source after that many sentences
and ``HERON_EXAMPLE_OUT`` (a directory) receives every window's counts as JSON lines.
"""

import json
import os
import sys
from typing import Any

from headwater.heronpy.connectors.mock.arraylooper import ArrayLooper
from headwater.heronpy.streamlet.builder import Builder
from headwater.heronpy.streamlet.config import Config
from headwater.heronpy.streamlet.generator import Generator
from headwater.heronpy.streamlet.runner import Runner
from headwater.heronpy.streamlet.windowconfig import WindowConfig

SENTENCES = [
    "Mary had a little lamb",
    "Humpty Dumpty sat on a wall",
    "Here we go round the mulberry bush",
]
LIMIT = int(os.environ.get("HERON_EXAMPLE_LIMIT", "0"))
OUT = os.environ.get("HERON_EXAMPLE_OUT")


class FirstOf(Generator):
    """The first ``limit`` elements of another generator, then nothing."""

    def __init__(self, inner: Generator, limit: int) -> None:
        self.inner, self.limit = inner, limit

    def setup(self, context: Any) -> None:
        self.inner.setup(context)
        self.given = 0

    def get(self) -> Any:
        if self.given >= self.limit:
            return None
        self.given += 1
        return self.inner.get()


def write_out(element: Any) -> None:
    assert OUT is not None
    with open(os.path.join(OUT, f"counts-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps([element[0][0], element[1]]) + "\n")  # [word, count]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Topology's name is not specified")
        sys.exit(1)
    source: Generator = ArrayLooper(SENTENCES, sleep=0.05)
    if LIMIT:
        source = FirstOf(source, LIMIT)
    builder = Builder()
    counts = (
        builder.new_source(source)
        .flat_map(lambda sentence: sentence.split())
        .map(lambda word: (word, 1))
        .reduce_by_key_and_window(WindowConfig.create_sliding_window(10, 2), lambda x, y: x + y)
    )
    counts.log()
    if OUT:
        counts.consume(write_out)
    Runner().run(sys.argv[1], Config(), builder)
