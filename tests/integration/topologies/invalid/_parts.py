"""Minimal components for the invalid-topology files."""

from __future__ import annotations

from headwater import Bolt, Spout, Tuple


class Words(Spout):
    outputs = ("word",)

    def next_tuple(self) -> None:
        pass


class Pass(Bolt):
    outputs = ("word",)

    def process(self, tup: Tuple) -> None:
        pass
