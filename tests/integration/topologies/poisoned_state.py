"""Exactly-once state holding a value whose unpickling runs a command (finding 11 of issue 31).

``Keep`` keeps an ``Evil`` in its keyed state: whatever process unpickles it runs ``id -u``
into ``$HW_TEST_REPORT/ran-<pid>.txt``. Only the topology's own processes may ever do that.
"""

from __future__ import annotations

import os

from headwater import Bolt, Context, Reliability, Tuple
from headwater.dsl import Pipeline

REPORT = os.environ.get("HW_TEST_REPORT", "/nonexistent")


class Evil:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (f"id -u > {REPORT}/ran-$$.txt",))


class Keep(Bolt):
    def open(self, ctx: Context) -> None:
        self.ctx = ctx
        self.kept = ctx.keyed_state("kept")

    def process(self, tup: Tuple) -> None:
        self.kept[tup.values[-1] % 3] = Evil()


p = Pipeline(
    "poisoned",
    config={
        "topology.reliability.mode": Reliability.EXACTLY_ONCE.value,
        "topology.stateful.checkpoint.interval.seconds": 1,
    },
)
p.from_collection("numbers", range(300)).to("keep", Keep)
topology = p.build()
