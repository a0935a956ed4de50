"""Heron's word-count streamlet, written fresh: only the import prefix differs from heronpy.

headwater run examples/heron/streamlet_word_count.py --duration 20
"""

from headwater.heronpy.connectors.mock.arraylooper import ArrayLooper
from headwater.heronpy.streamlet.builder import Builder
from headwater.heronpy.streamlet.config import Config
from headwater.heronpy.streamlet.runner import Runner
from headwater.heronpy.streamlet.windowconfig import WindowConfig

SENTENCES = [
    "Mary had a little lamb",
    "Humpty Dumpty sat on a wall",
    "Here we go round the mulberry bush",
]

if __name__ == "__main__":
    builder = Builder()
    (
        builder.new_source(ArrayLooper(SENTENCES, sleep=0.01))
        .flat_map(lambda sentence: sentence.split())
        .map(lambda word: (word, 1))
        .reduce_by_key_and_window(WindowConfig.create_sliding_window(10, 2), lambda x, y: x + y)
        .log()
    )
    Runner().run("WordCountStreamlet", Config(), builder)
