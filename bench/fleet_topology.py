"""Bench topology for the fleet: a small edge subgraph on every simulated agent.

    readings (spout, edge: fleet=sim) -> parse (edge: fleet=sim) -> sink (cloud)

Its edge part selects every agent labelled ``fleet=sim`` (all of the bench's); the cloud
part is one idle sink. The simulated agents never load or run it (``bench/fleet_agents.py``
says what they do with the order); nothing here emits.
"""

from __future__ import annotations

from headwater import Bolt, Context, Spout, Topology, Tuple, shuffle
from headwater.placement import edge


class Readings(Spout):
    outputs = ("sensor", "value")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def next_tuple(self) -> None:
        pass


class Parse(Bolt):
    outputs = ("sensor", "value")

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, tup: Tuple) -> None:
        self.ctx.emit(list(tup.values))


class Sink(Bolt):
    def process(self, tup: Tuple) -> None:
        pass


topology = (
    Topology("fleet")
    .add_spout("readings", Readings, placement=edge(fleet="sim"))
    .add_bolt("parse", Parse, inputs={"readings": shuffle()}, placement=edge(fleet="sim"))
    .add_bolt("sink", Sink, inputs={"parse": shuffle()})
)
