"""The functional DSL on a real cluster: fused chains, keyed windows, exactly-once output."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ._support import TOPOLOGIES, committed_rows, running, wait_for

pytestmark = pytest.mark.cluster
PIPELINE = TOPOLOGIES / "dsl_windows.py"


def _rows(out: Path) -> list[list[Any]]:
    return [row[1] for row in committed_rows(out)]


def test_windowed_pipeline_fuses_and_counts_every_window_once(tmp_path: Path) -> None:
    out = tmp_path / "out"
    count = 300
    expected = sorted(
        [
            f"s{k}",
            w * 10_000,
            sum(i for i in range(w * 10, w * 10 + 10) if i % 3 == k),
            len([i for i in range(w * 10, w * 10 + 10) if i % 3 == k]),
        ]
        for k in range(3)
        for w in range(count // 10)
    )
    with running(PIPELINE, env={"DSL_OUT": str(out), "DSL_COUNT": str(count)}) as c:
        plan = c.get("/plan")
        assert plan["fused"] == {
            "readings": ["readings", "valid", "by_sensor"],
            "per_10s": ["per_10s", "totals", "row"],
            "sink": ["sink"],  # a component fed by the DSL: not fused
        }
        assert {i["component"] for i in plan["instances"]} == {"readings", "per_10s", "sink"}
        wait_for(lambda: len(_rows(out)) >= len(expected), 60, "every window at the sink")
        assert sorted(_rows(out)) == expected


def test_outer_window_join_on_a_cluster(tmp_path: Path) -> None:
    import runpy

    out = tmp_path / "out"
    topo = runpy.run_path(str(TOPOLOGIES / "dsl_join.py"))
    expected: list[list[Any]] = []
    for w in range(4):
        for k in range(5):
            orders = [
                o["order"] for o in topo["ORDERS"] if o["c"] == f"c{k}" and o["ts"] // 10_000 == w
            ]
            paid = [
                q["paid"] for q in topo["PAYMENTS"] if q["c"] == f"c{k}" and q["ts"] // 10_000 == w
            ]
            expected += [[o, q] for o in orders for q in paid]
            expected += [[o, None] for o in orders] if not paid else []
            expected += [[None, q] for q in paid] if not orders else []
    with running(TOPOLOGIES / "dsl_join.py", env={"DSL_OUT": str(out)}) as c:
        assert c.get("/plan")["fused"]["matched"] == ["matched"]
        wait_for(lambda: len(_rows(out)) >= len(expected), 60, "every joined pair")
        assert sorted(_rows(out), key=repr) == sorted(expected, key=repr)


def test_windowed_pipeline_survives_random_sigkills_exactly(tmp_path: Path) -> None:
    """The exactly-once kill test with the DSL pipeline: instances, containers and the master
    SIGKILLed at random moments; every closed window once, with its exact count and sum."""
    import os
    import random
    import runpy

    from headwater.cloud.local import LocalCluster

    from ._support import dump_logs, kill_at_random_moments, running_epoch
    from .test_exactly_once import KEYS, _produce

    n = 100_000
    _produce(tmp_path / "log", n)
    out = tmp_path / "out"
    env = {"HW_TEST_LOG": str(tmp_path / "log"), "HW_TEST_OUT": str(out), "HW_TEST_RATE": "5000"}
    want = runpy.run_path(str(TOPOLOGIES / "dsl_exactly_once.py"))["expected"](KEYS, n // KEYS)
    seed = int(os.environ.get("HW_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    kills = ["instance", "instance", "container", "master"]
    rng.shuffle(kills)
    print(f"seed {seed}: {kills}")
    cluster = LocalCluster(TOPOLOGIES / "dsl_exactly_once.py", containers=2, env=env)
    cluster.start()
    cluster.supervise()
    try:
        cluster.wait_running(timeout=60)
        epoch = kill_at_random_moments(
            cluster, rng, kills, lambda: len(_rows(out)), (20, 150), len(want)
        )
        wait_for(lambda: len(_rows(out)) >= len(want), 240, "every closed window at the sink")
        assert sorted(tuple(r) for r in _rows(out)) == want
        # each kill opened a new epoch (the helper waits for it); the topology runs on
        assert epoch >= 1 + len(kills)
        assert wait_for(lambda: running_epoch(cluster), 60, "the topology to run") >= epoch
    except BaseException:
        dump_logs(cluster.workdir)
        raise
    finally:
        cluster.stop()


@pytest.mark.parametrize("exactly_once", [False, True], ids=["at_most_once", "exactly_once"])
def test_partitioned_pipeline_runs_as_parallel_chains(tmp_path: Path, exactly_once: bool) -> None:
    """key_by(partitioned=True) with parallelism 2: one component, two tasks, each running the
    whole pipeline over its own sensors; every window once with its exact sum and count, and
    each task's stray reading of the other's sensor in the dead letters, counted nowhere."""
    import json

    out = tmp_path / "out"
    out.mkdir()
    count = 300
    expected = sorted(
        [
            f"s{k}",
            w * 10_000,
            sum(i for i in range(w * 10, w * 10 + 10) if i % 6 == k),
            len([i for i in range(w * 10, w * 10 + 10) if i % 6 == k]),
        ]
        for k in range(6)
        for w in range(count // 10)
    )

    def lines(kind: str) -> list[Any]:
        return [
            json.loads(x)
            for f in out.glob(f"{kind}-*.jsonl")
            for x in f.read_text().split("\n")
            if x
        ]

    env = {"DSL_OUT": str(out), "DSL_COUNT": str(count), "DSL_EXACTLY_ONCE": str(int(exactly_once))}
    with running(TOPOLOGIES / "dsl_partitioned.py", containers=1, env=env) as c:
        plan = c.get("/plan")
        assert plan["fused"]["readings"] == [
            "readings",
            "valid",
            "by_sensor",
            "per_10s",
            "totals",
            "row",
            "out",
        ]
        assert sorted(i["component"] for i in plan["instances"]) == ["dead", "readings", "readings"]
        wait_for(lambda: len(lines("rows")) >= len(expected), 60, "every window at the sink")
        wait_for(lambda: len(lines("dead")) >= 2, 60, "both strays in the dead letters")
        assert sorted(lines("rows")) == expected
        dead = lines("dead")
        assert sorted(d[0] for d in dead) == ["by_sensor", "by_sensor"]
        assert all("belongs to partition" in d[1] for d in dead)
        assert sorted(d[3]["v"] for d in dead) == [1000, 1000]
