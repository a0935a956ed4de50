"""A topology whose top level reports which process loads it (finding 11 of issue 31).

Each time a process loads this file it appends ``{"pid", "version"}`` as a JSON line to
``$HW_TEST_REPORT``; ``HW_TEST_PROBE_EDGE=1`` places the spout on agents. The spout emits
nothing, so the topology just runs until it is killed.
"""

from __future__ import annotations

import json
import os

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle
from headwater.placement import cloud, edge

VERSION = "original"
_REPORT = os.environ.get("HW_TEST_REPORT")
if _REPORT:
    with open(_REPORT, "a", encoding="utf-8") as f:
        f.write(json.dumps({"pid": os.getpid(), "version": VERSION}) + "\n")


class Idle(Spout):
    outputs = ("n",)

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def next_tuple(self) -> None:
        pass


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


_EDGE = os.environ.get("HW_TEST_PROBE_EDGE") == "1"
topology = (
    Topology("probe")
    .add_spout("idle", Idle, placement=edge() if _EDGE else cloud())
    .add_bolt("sink", Sink, inputs={"idle": shuffle()})
)
