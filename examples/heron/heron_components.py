"""Spouts and bolts of Heron's Python examples, written fresh for Headwater.

Behaviour follows Heron's examples (``WordSpout`` cycles six words with a
constant tup_id; ``CountBolt`` counts "heron" ten times; ``HalfAckBolt`` acks
odd and fails even tuples per task). Two additions make runs checkable: the
spouts stop after ``HERON_EXAMPLE_LIMIT`` tuples per task when it is set, and
counts are published as user counters through ``global_metrics``.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from itertools import cycle
from typing import Any

from headwater.heronpy.api import global_metrics
from headwater.heronpy.api.bolt.bolt import Bolt
from headwater.heronpy.api.bolt.window_bolt import SlidingWindowBolt
from headwater.heronpy.api.custom_grouping import ICustomGrouping
from headwater.heronpy.api.metrics import CountMetric
from headwater.heronpy.api.spout.spout import Spout
from headwater.heronpy.api.state.stateful_component import StatefulComponent
from headwater.heronpy.api.stream import Stream

WORDS = ["hello", "bye", "good", "bad", "heron", "storm"]
LIMIT = int(os.environ.get("HERON_EXAMPLE_LIMIT", "0")) or None
RATE = float(os.environ.get("HERON_EXAMPLE_RATE", "0"))  # words/s per spout task; 0: no pacing


class WordSpout(Spout):
    outputs = ["word"]

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.logger.info("In initialize() of WordSpout")
        self.words = cycle(WORDS)
        self.emit_count = 0
        self.ack_count = 0
        self.fail_count = 0

    def next_tuple(self) -> None:
        if LIMIT is not None and self.emit_count >= LIMIT:
            return
        word = next(self.words)
        self.emit([word], tup_id="message id")
        self.emit_count += 1

    def ack(self, tup_id: Any) -> None:
        self.ack_count += 1
        global_metrics.safe_incr("spout_acks")

    def fail(self, tup_id: Any) -> None:
        self.fail_count += 1
        global_metrics.safe_incr("spout_fails")


class MultiStreamSpout(Spout):
    outputs = ["word", Stream(fields=["error_msg"], name="error")]
    ERROR_EVERY = 1000

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.words = cycle(WORDS)
        self.emit_count = 0

    def next_tuple(self) -> None:
        if LIMIT is not None and self.emit_count >= LIMIT:
            return
        self.emit([next(self.words)])
        self.emit_count += 1
        if self.emit_count % self.ERROR_EVERY == 0:
            self.emit(["test error message"], stream="error")


class CountBolt(Bolt):
    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.counter: Counter[str] = Counter()
        self.total = 0

    def process(self, tup: Any) -> None:
        word = tup.values[0]
        inc = 10 if word == "heron" else 1
        self.counter[word] += inc
        self.total += inc
        global_metrics.safe_incr("count", inc)
        self.ack(tup)

    def process_tick(self, tup: Any) -> None:
        self.log(f"Current map: {self.counter}")


class HalfAckBolt(Bolt):
    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.total = 0

    def process(self, tup: Any) -> None:
        self.total += 1
        if self.total % 2 == 0:
            self.fail(tup)
        else:
            self.ack(tup)


class StreamAggregateBolt(Bolt):
    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.stream_counter: Counter[str] = Counter()

    def process(self, tup: Any) -> None:
        self.stream_counter[tup.stream] += 1
        global_metrics.safe_incr(f"stream:{tup.stream}")


class ConsumeBolt(Bolt):
    """Counts what it consumes, in a global counter and in a metric it registers."""

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.total = 0
        self.consumed = CountMetric()
        context.register_metric("consume_count", self.consumed, 10)

    def process(self, tup: Any) -> None:
        self.total += 1
        self.consumed.incr()
        global_metrics.safe_incr("consumed")


class WindowSizeBolt(SlidingWindowBolt):
    """Heron's window size example: logs how many tuples each window holds.

    The sliding window bolt acks each tuple once it has left its last window; the
    windows seen and their sizes are published as user counters."""

    def processWindow(self, window_info: Any, tuples: list[Any]) -> None:
        self.logger.info("Window %s holds %d tuples", window_info, len(tuples))
        if tuples:
            global_metrics.safe_incr("windows")
            global_metrics.safe_incr("windowed", len(tuples))


class SampleCustomGrouping(ICustomGrouping):
    """Sends everything to the consumer's first task."""

    def prepare(self, context: Any, component: str, stream: str, target_tasks: list[int]) -> None:
        self.target_tasks = target_tasks

    def choose_tasks(self, values: list[Any]) -> list[int]:
        return [self.target_tasks[0]]


class StatefulWordSpout(Spout, StatefulComponent):
    """Heron's StatefulWordSpout: counts what it emitted and checkpoints the counts.

    On restore it resumes the word cycle where the checkpoint left it, so a
    rollback replays exactly what followed the checkpoint.
    """

    outputs = ["word"]

    def init_state(self, stateful_state: Any) -> None:
        self.recovered_state = stateful_state
        self.logger.info("Checkpoint Snapshot recovered : %s", self.recovered_state)

    def pre_save(self, checkpoint_id: Any) -> None:
        for k, v in self.counter.items():
            self.recovered_state.put(k, v)

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.counter: Counter[str] = Counter(
            {k: self.recovered_state.get(k) for k in list(self.recovered_state)}
        )
        self.emit_count = sum(self.counter.values())
        self._start, self._paced = time.monotonic(), 0
        self.words = cycle(
            WORDS[self.emit_count % len(WORDS) :] + WORDS[: self.emit_count % len(WORDS)]
        )

    def next_tuple(self) -> None:
        if LIMIT is not None and self.emit_count >= LIMIT:
            return
        if RATE and self._paced >= (time.monotonic() - self._start) * RATE:
            return
        word = next(self.words)
        self.emit([word], tup_id="message id")
        self.counter[word] += 1
        self.emit_count += 1
        self._paced += 1


class StatefulCountBolt(Bolt, StatefulComponent):
    """Heron's StatefulCountBolt: word counts kept in checkpointed state."""

    def init_state(self, stateful_state: Any) -> None:
        self.recovered_state = stateful_state

    def pre_save(self, checkpoint_id: Any) -> None:
        for k, v in self.counter.items():
            self.recovered_state.put(k, v)

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.counter: Counter[str] = Counter(
            {k: self.recovered_state.get(k) for k in list(self.recovered_state)}
        )

    def process(self, tup: Any) -> None:
        self.counter[tup.values[0]] += 1
        self.ack(tup)
