"""A streamlet join in Heron's style, written fresh: impressions joined with clicks per user.

headwater run examples/heron/streamlet_join.py --duration 20 -- JoinStreamlet

Each source sleeps before every event, as Heron's example generators do. Each user
has one impression and one click, so an outer join gives, per user, either the pair
(both in one window) or each side alone with None. ``HERON_EXAMPLE_LIMIT`` sets the
number of users, ``HERON_EXAMPLE_OUT`` (a directory) receives the joined rows.
"""

import json
import os
import sys
import time
from typing import Any

from headwater.heronpy.streamlet.builder import Builder
from headwater.heronpy.streamlet.config import Config
from headwater.heronpy.streamlet.generator import Generator
from headwater.heronpy.streamlet.runner import Runner
from headwater.heronpy.streamlet.windowconfig import WindowConfig

USERS = int(os.environ.get("HERON_EXAMPLE_LIMIT", "0")) or 1000
OUT = os.environ.get("HERON_EXAMPLE_OUT")


class Events(Generator):
    """(user, event) for users 0, 1, 2, ...: one event each, one every 0.1 s."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def setup(self, context: Any) -> None:
        self.user = 0

    def get(self) -> tuple[str, str] | None:
        if self.user >= USERS:
            return None
        time.sleep(0.1)
        self.user += 1
        return f"user-{self.user}", f"{self.kind}-{self.user}"


def write_out(element: Any) -> None:
    assert OUT is not None
    with open(os.path.join(OUT, f"joined-{os.getpid()}.jsonl"), "a") as f:
        f.write(json.dumps([element[0][0], list(element[1])]) + "\n")  # [user, [imp, click]]


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("Topology's name is not specified")
        sys.exit(1)
    builder = Builder()
    impressions = builder.new_source(Events("impression")).set_name("impressions")
    clicks = builder.new_source(Events("click")).set_name("clicks")
    joined = impressions.outer_join(
        clicks,
        WindowConfig.create_tumbling_window(5),
        lambda impression, click: (impression, click),
    ).set_name("joined")
    joined.log()
    if OUT:
        joined.consume(write_out)
    Runner().run(sys.argv[1], Config(), builder)
