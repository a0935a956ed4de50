"""Edge numbers -> an edge model that cannot start -> a cloud sink; exactly once.

``model`` raises in its constructor on every agent, so the agent's edge domain
crash-loops. With HW_TEST_CRASH_CONTAINER set (a worker's environment), a cloud
container process (started with ``--domain cloud``) fails as soon as it loads this
file, so the worker restarts its container again and again.
"""

from __future__ import annotations

import itertools
import os
import sys

from headwater import Bolt, Context, Reliability, Spout, Topology, Tuple, shuffle
from headwater.placement import edge


def _in_the_cloud_domain() -> bool:
    # the process's own command line: the loader replaces sys.argv while it runs this file
    argv = sys.orig_argv
    return any(a == "--domain" and b == "cloud" for a, b in itertools.pairwise(argv))


if os.environ.get("HW_TEST_CRASH_CONTAINER") and _in_the_cloud_domain():
    sys.exit(3)


class Numbers(Spout):
    outputs = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def next_tuple(self) -> None:
        pass


class Model(Bolt):
    outputs = ("n",)

    def __init__(self) -> None:
        raise RuntimeError("the model file is missing")

    def process(self, tup: Tuple) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


topology = (
    Topology("crashing", config={"topology.reliability.mode": Reliability.EXACTLY_ONCE.value})
    .add_spout("numbers", Numbers, placement=edge())
    .add_bolt("model", Model, inputs={"numbers": shuffle()}, placement=edge())
    .add_bolt("sink", Sink, inputs={"model": shuffle()})
)
