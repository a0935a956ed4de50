"""Heron's Python examples and its integration-test protocol, written fresh in heronpy
style, run on real clusters with exact expected results (issue 19).

Like Heron's, the examples take their topology's name as ``sys.argv[1]``
(``headwater run FILE -- NAME``; here through ``HEADWATER_TOPOLOGY_ARGS``, which
``headwater run`` sets).
"""

from __future__ import annotations

import json
import os
import runpy
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

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


def _env(*args: str, **env: str) -> dict[str, str]:
    return {"HEADWATER_TOPOLOGY_ARGS": json.dumps(list(args)), **env}


def test_word_count_acks_every_tuple() -> None:
    env = _env("WordCountTopology", HERON_EXAMPLE_LIMIT="600")
    with running(HERON / "word_count_topology.py", env=env) as c:
        assert c.topology.name == "WordCountTopology"
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
    env = _env("HalfAcking", HERON_EXAMPLE_LIMIT="600")
    with running(HERON / "half_acking_topology.py", env=env) as c:
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
        # the bolt's figures reach the master on its own report, maybe after the spout's
        wait_for(
            lambda: component_total(c, "half_ack_bolt", "acked") >= 600,
            30,
            "the bolt's acks reported",
        )
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
        # the metric the bolt registered, reported under the component's metrics
        wait_for(
            lambda: c.metrics()["components"]["consume_bolt"].get("user:consume_count") == 600,
            30,
            "the registered metric",
        )
        # at-most-once with a tup_id: heronpy acks at once
        wait_for(lambda: component_total(c, "word_spout", "acked") == 600, 30, "immediate acks")
        assert component_total(c, "word_spout", "failed") == 0


def test_stateful_word_count_is_exact_after_a_kill() -> None:
    limit = 30_000  # words per spout task, paced so that the kill lands mid-run
    env = _env(
        "StatefulWordCountTopology", HERON_EXAMPLE_LIMIT=str(limit), HERON_EXAMPLE_RATE="5000"
    )
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


def test_window_size_acks_every_tuple_once_it_leaves_its_windows() -> None:
    env = _env("WindowSize", HERON_EXAMPLE_LIMIT="300")
    with running(HERON / "window_size_topology.py", env=env) as c:
        # a tuple is acked when it expires: 10 s windows every 2 s
        wait_for(lambda: component_total(c, "word_spout", "acked") == 600, 90, "all acks")
        assert component_total(c, "word_spout", "failed") == 0
        assert component_total(c, "window_size_bolt", "acked") == 600
        assert component_total(c, "window_size_bolt", "user:windows") >= 1


def _rows(out: Path, name: str) -> list[Any]:
    rows: list[Any] = []
    for f in sorted(out.glob(f"{name}-*.jsonl")):
        rows += [json.loads(line) for line in f.read_text().splitlines() if line]
    return rows


def test_streamlet_word_count_counts_each_word_in_all_its_windows(tmp_path: Path) -> None:
    sentences = 30
    env = _env("WordCountStreamlet", HERON_EXAMPLE_LIMIT=str(sentences))
    env["HERON_EXAMPLE_OUT"] = str(tmp_path)
    spec = runpy.run_path(str(HERON / "streamlet_word_count.py"))
    words: Counter[str] = Counter()
    for i in range(sentences):
        words.update(spec["SENTENCES"][i % 3].split())

    def summed() -> Counter[str]:
        total: Counter[str] = Counter()
        for word, n in _rows(tmp_path, "counts"):
            total[word] += n
        return total

    with running(HERON / "streamlet_word_count.py", env=env):
        # 10 s windows every 2 s: every word is counted in exactly 5 windows
        wait_for(lambda: sum(summed().values()) >= 5 * sum(words.values()), 90, "all windows")
    assert summed() == Counter({w: 5 * n for w, n in words.items()})


def test_streamlet_join_pairs_each_user_once(tmp_path: Path) -> None:
    users = 20
    env = _env("JoinStreamlet", HERON_EXAMPLE_LIMIT=str(users))
    env["HERON_EXAMPLE_OUT"] = str(tmp_path)

    def per_user() -> dict[str, list[list[Any]]]:
        out: dict[str, list[list[Any]]] = {}
        for user, pair in _rows(tmp_path, "joined"):
            out.setdefault(user, []).append(pair)
        return out

    def sides_seen() -> int:
        return sum(1 for pairs in per_user().values() for pair in pairs for v in pair if v)

    with running(HERON / "streamlet_join.py", env=env):
        wait_for(lambda: sides_seen() >= 2 * users, 90, "every impression and click")
    joined = per_user()
    assert sorted(joined) == sorted(f"user-{i}" for i in range(1, users + 1))
    for user, pairs in joined.items():
        i = user.split("-")[1]
        together = [[f"impression-{i}", f"click-{i}"]]
        apart = [[None, f"click-{i}"], [f"impression-{i}", None]]
        assert sorted(pairs, key=str) in (together, sorted(apart, key=str)), (user, pairs)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("OneSpoutTwoBolts", Counter({(w,): 4 for w in "ABCDE"})),
        ("FieldsGrouping", Counter({(w, n): 1 for w in "ABCDE" for n in range(1, 7)})),
        ("BoltDoubleEmit", Counter({(w,): 4 for w in "ABCDE"})),
    ],
)
def test_integration_protocol(
    name: str, expected: Counter[tuple[Any, ...]], tmp_path: Path
) -> None:
    """Finite spouts, terminal markers, and __integration_test_aggregator_bolt's result."""
    out = tmp_path / "result.json"
    with running(HERON / "integration_topology.py", env=_env(name, str(out))) as c:
        assert "__integration_test_aggregator_bolt" in [x.name for x in c.topology.components]
        wait_for(out.exists, 90, "the aggregator's result")
    assert Counter(tuple(row) for row in json.loads(out.read_text())) == expected


def test_cli_run_passes_the_arguments_after_double_dash(tmp_path: Path) -> None:
    base = [sys.executable, "-m", "headwater", "run", str(HERON / "word_count_topology.py")]
    env = {**os.environ, "HERON_EXAMPLE_LIMIT": "60", "HEADWATER_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [*base, "--duration", "3", "--quiet", "--", "NamedOnTheCommandLine"],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "running 'NamedOnTheCommandLine'" in done.stdout
    unnamed = subprocess.run(
        base, check=False, env=env, capture_output=True, text=True, timeout=120
    )
    assert unnamed.returncode != 0
    assert "exited with 1 while loading" in unnamed.stderr
