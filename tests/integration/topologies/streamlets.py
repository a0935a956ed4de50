"""heronpy streamlets with exact outcomes: finite sources, results written by ``consume``.

STREAMLET_OUT: folder (one file per consuming process and stream).
"""

import json
import os
from typing import Any

from headwater.heronpy.streamlet.builder import Builder
from headwater.heronpy.streamlet.config import Config
from headwater.heronpy.streamlet.generator import Generator
from headwater.heronpy.streamlet.runner import Runner
from headwater.heronpy.streamlet.windowconfig import WindowConfig

OUT = os.environ.get("STREAMLET_OUT", "/tmp/hw-streamlets")
SENTENCES = ["the quick brown fox", "jumps over the lazy dog", "the end"] * 30
LEFT = [(f"k{i % 6}", f"L{i}") for i in range(24)]  # keys k0..k5
RIGHT = [(f"k{i % 4 + 3}", f"R{i}") for i in range(16)]  # keys k3..k6


class Finite(Generator):
    def __init__(self, items: list[Any]) -> None:
        self.items = items

    def setup(self, context: object) -> None:
        self.i = 0

    def get(self) -> Any:
        if self.i >= len(self.items):
            return None
        self.i += 1
        return self.items[self.i - 1]


def writer(name: str) -> Any:
    def write(element: Any) -> None:
        with open(os.path.join(OUT, f"{name}-{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(element) + "\n")

    return write


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    builder = Builder()
    words = builder.new_source(Finite(SENTENCES)).flat_map(str.split).set_name("words")
    counted, copied = words.clone(2)
    (
        counted.map(lambda w: (w, 1))
        .reduce_by_key_and_window(WindowConfig.create_tumbling_window(1), lambda a, b: a + b)
        .map(lambda kv: [kv[0].key, kv[1]])  # (KeyedWindow, count) -> [word, count]
        .consume(writer("counts"))
    )
    copied.repartition(3, lambda word, n: len(word) % n).consume(writer("copies"))
    left = builder.new_source(Finite(LEFT)).set_name("left")
    right = builder.new_source(Finite(RIGHT)).set_name("right")
    (
        left.outer_join(right, WindowConfig.create_tumbling_window(30), lambda a, b: [a, b])
        .map(lambda kv: [kv[0].key, kv[1]])
        .consume(writer("joined"))
    )
    Runner().run("Streamlets", Config(), builder)
