"""A streamlet join in Heron's style, written fresh: impressions joined with clicks per user.

headwater run examples/heron/streamlet_join.py --duration 20
"""

import random
import time

from headwater.heronpy.streamlet.builder import Builder
from headwater.heronpy.streamlet.config import Config
from headwater.heronpy.streamlet.generator import Generator
from headwater.heronpy.streamlet.runner import Runner
from headwater.heronpy.streamlet.windowconfig import WindowConfig

USERS = ["ann", "bob", "cid", "dee"]


class Events(Generator):
    """(user, event) pairs, five a second (None in between: nothing to send yet)."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def setup(self, context: object) -> None:
        self.rng = random.Random(self.kind)
        self.next_at = time.monotonic()

    def get(self) -> tuple[str, str] | None:
        if time.monotonic() < self.next_at:
            return None
        self.next_at += 0.2
        return self.rng.choice(USERS), f"{self.kind}-{self.rng.randrange(1000)}"


if __name__ == "__main__":
    builder = Builder()
    impressions = builder.new_source(Events("impression")).set_name("impressions")
    clicks = builder.new_source(Events("click")).set_name("clicks")
    (
        impressions.outer_join(
            clicks,
            WindowConfig.create_tumbling_window(5),
            lambda impression, click: (impression, click),
        )
        .set_name("joined")
        .log()
    )
    Runner().run("JoinStreamlet", Config(), builder)
