"""Acceptance 3: every grouping routes exactly as expected, over 2 containers."""

from __future__ import annotations

from pathlib import Path

import pytest

from headwater.common.plan import task_ids
from headwater.common.runtime import key_hash

from ._support import TOPOLOGIES, read_records, running, wait_for

N = 600
pytestmark = pytest.mark.cluster


def test_every_grouping_routes_exactly(out_dir: Path) -> None:
    env = {"HW_TEST_OUT": str(out_dir), "HW_TEST_N": str(N)}
    with running(TOPOLOGIES / "groupings.py", containers=2, env=env) as cluster:
        ids = task_ids(cluster.topology)
        assert {cluster.plan.container_of(t) for t in ids["shuffle"]} == {0, 1}
        expected_totals = {
            "shuffle": N,
            "fields": N,
            "all": 3 * N,
            "global": N,
            "none": N,
            "custom": N,
            "direct": N,
        }

        def complete() -> bool:
            return all(
                sum(len(v) for v in read_records(out_dir, c).values()) >= n
                for c, n in expected_totals.items()
            )

        wait_for(complete, 60, "every consumer to receive its tuples")
    seqs = list(range(N))
    got = {c: read_records(out_dir, c) for c in expected_totals}
    by_task = {c: {t: sorted(v[0] for v in got[c].get(t, [])) for t in ids[c]} for c in got}

    for name in ("shuffle", "none"):  # round-robin from one spout task: an even split
        assert sorted(s for t in by_task[name].values() for s in t) == seqs
        assert sorted(len(t) for t in by_task[name].values()) == [200, 200, 200]
    tasks = ids["fields"]
    assert by_task["fields"] == {
        t: [s for s in seqs if tasks[key_hash(s % 7) % 3] == t] for t in tasks
    }
    assert all(by_task["all"][t] == seqs for t in ids["all"])
    lowest = min(ids["global"])
    assert by_task["global"] == {t: (seqs if t == lowest else []) for t in ids["global"]}
    d = ids["direct"]
    assert by_task["direct"] == {t: [s for s in seqs if d[s % 3] == t] for t in d}
    c = ids["custom"]
    assert by_task["custom"] == {c[0]: seqs[0::2], c[1]: seqs[1::2], c[2]: []}
