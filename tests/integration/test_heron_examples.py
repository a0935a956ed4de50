"""Acceptance 4: Heron's Python examples, ported, run after the import-prefix change."""

from __future__ import annotations

import os
import signal
from collections import Counter

import pytest

from headwater.common.plan import task_ids

from ._support import (
    EXAMPLES,
    checkpointed_state,
    component_total,
    running,
    task_metric,
    wait_for,
)

HERON = EXAMPLES / "heron"
pytestmark = pytest.mark.cluster


def test_word_count_acks_every_tuple() -> None:
    with running(HERON / "word_count_topology.py", env={"HERON_EXAMPLE_LIMIT": "600"}) as c:
        # 2 spout tasks x 600 words; "heron" (1 word in 6) counts 10
        wait_for(
            lambda: component_total(c, "count_bolt", "user:count") == 1000 + 200 * 10,
            60,
            "all words counted",
        )
        wait_for(lambda: component_total(c, "word_spout", "acked") == 1200, 30, "all acks")
        assert component_total(c, "word_spout", "user:spout_acks") == 1200
        assert component_total(c, "word_spout", "failed") == 0
        assert component_total(c, "count_bolt", "executed") == 1200


def test_half_acking_fails_half() -> None:
    with running(HERON / "half_acking_topology.py", env={"HERON_EXAMPLE_LIMIT": "600"}) as c:
        # every word arrives 200 times at one task, so each task acks and fails evenly
        wait_for(
            lambda: (
                component_total(c, "word_spout", "acked")
                + component_total(c, "word_spout", "failed")
                == 1200
            ),
            60,
            "every ack or fail",
        )
        assert component_total(c, "word_spout", "acked") == 600
        assert component_total(c, "word_spout", "failed") == 600
        assert component_total(c, "word_spout", "user:spout_fails") == 600
        assert component_total(c, "half_ack_bolt", "acked") == 600


def test_multi_stream() -> None:
    with running(HERON / "multi_stream_topology.py", env={"HERON_EXAMPLE_LIMIT": "3000"}) as c:
        wait_for(
            lambda: component_total(c, "stream_aggregator", "executed") == 6006,
            60,
            "the aggregator to see both streams",
        )
        assert component_total(c, "stream_aggregator", "user:stream:default") == 6000
        assert component_total(c, "stream_aggregator", "user:stream:error") == 6
        wait_for(
            lambda: component_total(c, "count_bolt", "user:count") == 5000 + 1000 * 10,
            30,
            "the counts",
        )
        assert component_total(c, "spout", "acked") == 0  # no tup_id: no acks


def test_custom_grouping() -> None:
    with running(HERON / "custom_grouping_topology.py", env={"HERON_EXAMPLE_LIMIT": "600"}) as c:
        first = min(task_ids(c.topology)["consume_bolt"])
        wait_for(
            lambda: component_total(c, "consume_bolt", "user:consumed") == 600,
            60,
            "all words consumed",
        )
        per_task = task_metric(c, "consume_bolt", "user:consumed")
        assert per_task == {t: (600.0 if t == first else 0.0) for t in per_task}
        # at-most-once with a tup_id: heronpy acks at once
        wait_for(lambda: component_total(c, "word_spout", "acked") == 600, 30, "immediate acks")
        assert component_total(c, "word_spout", "failed") == 0


def test_stateful_word_count_is_exact_after_a_kill() -> None:
    limit = 30_000  # words per spout task, paced so that the kill lands mid-run
    env = {"HERON_EXAMPLE_LIMIT": str(limit), "HERON_EXAMPLE_RATE": "5000"}
    with running(HERON / "stateful_word_count_topology.py", env=env) as c:
        c.supervise()
        wait_for(lambda: c.get("/checkpoints")["latest_complete"] >= 2, 60, "two checkpoints")
        ids = task_ids(c.topology)
        victim = int(c.metrics()["tasks"][str(ids["count_bolt"][0])]["pid"])
        os.kill(victim, signal.SIGKILL)
        spouts, counts = ids["word_spout"], ids["count_bolt"]
        per_word = 2 * limit // 6  # 2 tasks, 6 words in the cycle
        expected = dict.fromkeys(["hello", "bye", "good", "bad", "heron", "storm"], per_word)

        def checkpointed() -> dict[str, int] | None:
            latest = c.get("/checkpoints")["latest_complete"]
            states = {t: checkpointed_state(c, latest, t) for t in spouts + counts}
            if sum(sum(states[t].values()) for t in spouts) < 2 * limit:
                return None  # the spouts have not finished as of that checkpoint
            total: Counter[str] = Counter()
            for t in counts:
                total.update(states[t])
            return dict(total) if total == Counter(expected) else None

        assert wait_for(checkpointed, 120, "exact counts in checkpointed state") == expected
        assert c.summary()["recoveries"] >= 1
