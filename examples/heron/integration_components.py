"""User components of the integration-test topologies (loaded by class path)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.spout.spout import Spout

WORDS = ["A", "B", "C", "D", "E"]


class ABCDESpout(Spout):
    """Cycles the five words, one a call, with the word as its tup_id."""

    outputs = ["word"]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.i = 0

    def next_tuple(self) -> None:
        word = WORDS[self.i % len(WORDS)]
        self.i += 1
        self.emit([word], tup_id=word)


class IdentityBolt(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit(tup.values, anchors=[tup])
        self.ack(tup)


class DoubleEmitBolt(Bolt):
    outputs = ["word"]

    def process(self, tup: Any) -> None:
        self.emit(tup.values, anchors=[tup])
        self.emit(tup.values, anchors=[tup])
        self.ack(tup)


class CountAggregatorBolt(Bolt):
    """The running count of each word it sees: [word, n]. It leaves acking to the core."""

    outputs = ["word", "count"]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.counts: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        self.counts[word] += 1
        self.emit([word, self.counts[word]])
