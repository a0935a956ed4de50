"""Issue 3 acceptance 1-3: exactly-once results through random SIGKILLs and a corrupt checkpoint."""

from __future__ import annotations

import json
import os
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from headwater import HeadwaterError
from headwater.cloud.local import LocalCluster
from headwater.common.connectors._log_spout import append_records
from headwater.common.runtime import key_hash
from headwater.common.state import CheckpointStore

from ._support import (
    TOPOLOGIES,
    committed_rows,
    dump_logs,
    kill_at_random_moments,
    running,
    running_epoch,
    wait_for,
)

pytestmark = pytest.mark.cluster
KEYS = 20
PARTITIONS = 4  # as in topologies/exactly_once.py
WINDOW = 100


def _produce(log: Path, n: int) -> None:
    """n records [key, seq]: seq counts per key; each key lives in one partition, in order."""
    rows: dict[int, list[list[Any]]] = defaultdict(list)
    for i in range(n):
        key = f"k{i % KEYS}"
        rows[key_hash(key) % PARTITIONS].append([key, i // KEYS])
    for p, r in rows.items():
        append_records(log, p, r)


def _check_exact(out: Path, n: int) -> None:
    """Every (key, seq) once, gap-free, with the running count and total recomputed offline."""
    by_key: dict[str, list[list[Any]]] = defaultdict(list)
    for row in committed_rows(out):
        by_key[row[0]].append(row)
    per_key = n // KEYS
    assert sorted(by_key) == sorted(f"k{i}" for i in range(KEYS))
    for key, rows in by_key.items():
        rows.sort(key=lambda r: r[1])
        assert [r[1] for r in rows] == list(range(per_key)), f"{key}: gaps or duplicates"
        total = 0
        for seq, (_, _, count, got_total) in enumerate(rows):
            total += seq
            assert (count, got_total) == (seq + 1, total), f"{key} seq {seq}: wrong state"


def _check_windows(out: Path, n: int) -> None:
    """Every closed window of every key once, with its exact count and sum."""
    per_key = n // KEYS
    closed = per_key // WINDOW - (1 if per_key % WINDOW == 0 else 0)  # the last stays open
    got = sorted(tuple(r) for r in committed_rows(out))
    want = sorted(
        (f"k{k}", w, WINDOW, sum(range(w * WINDOW, (w + 1) * WINDOW)))
        for k in range(KEYS)
        for w in range(closed)
    )
    assert got == want


def _env(tmp: Path) -> dict[str, str]:
    return {"HW_TEST_LOG": str(tmp / "log"), "HW_TEST_OUT": str(tmp / "out")}


def test_random_sigkills_leave_exact_results(tmp_path: Path) -> None:
    n = 200_000
    _produce(tmp_path / "log", n)
    env = {**_env(tmp_path), "HW_TEST_RATE": "6000"}  # per spout task: ~17 s of input
    seed = int(os.environ.get("HW_TEST_SEED", random.randrange(1 << 30)))
    rng = random.Random(seed)
    kills = ["instance", "instance", "container", "master", "instance", "container"]
    rng.shuffle(kills)
    print(f"seed {seed}: {kills}")
    cluster = LocalCluster(TOPOLOGIES / "exactly_once.py", containers=2, env=env)
    cluster.start()
    cluster.supervise()
    out = tmp_path / "out"
    try:
        cluster.wait_running(timeout=60)
        # random moments: after a random amount of committed output
        epoch = kill_at_random_moments(
            cluster, rng, kills, lambda: len(committed_rows(out)), (1_000, 20_000), n
        )
        wait_for(lambda: len(committed_rows(out)) >= n, 240, "every record at the sink")
        _check_exact(out, n)
        _check_windows(Path(f"{out}-windows"), n)
        # each kill, made while the topology ran, opened a new epoch (the helper waits for
        # it); and the topology runs on, in that epoch or a later one
        assert epoch >= 1 + len(kills)
        assert wait_for(lambda: running_epoch(cluster), 60, "the topology to run") >= epoch
    except BaseException:
        dump_logs(cluster.workdir)
        raise
    finally:
        cluster.stop()


def test_corrupt_latest_checkpoint_falls_back_to_the_previous(tmp_path: Path) -> None:
    n = 40_000
    _produce(tmp_path / "log", n)
    env = {**_env(tmp_path), "HW_TEST_RATE": "4000"}
    workdir = tmp_path / "cluster"
    out = tmp_path / "out"
    first = LocalCluster(TOPOLOGIES / "exactly_once.py", containers=2, env=env, workdir=workdir)
    first.start()
    try:
        first.wait_running(timeout=60)
        wait_for(
            lambda: first.get("/checkpoints")["latest_complete"] >= 3,
            60,
            "three complete checkpoints",
        )
    finally:
        first.stop()  # like a power cut: state stays in the workdir
    catalogue = json.loads((workdir / "tmaster-state" / "catalogue.json").read_text())
    latest = max(c["id"] for c in catalogue["checkpoints"] if c["state"] == "COMPLETE")
    store = CheckpointStore(workdir / "state" / "container-0")
    store.corrupt(
        latest,
        min(
            first.plan.instance(t).task_id for t in (i.task_id for i in first.plan.in_container(0))
        ),
    )
    store.close()

    second = LocalCluster(TOPOLOGIES / "exactly_once.py", containers=2, env=env, workdir=workdir)
    second.start()
    try:
        second.wait_running(timeout=60)
        wait_for(lambda: len(committed_rows(out)) >= n, 120, "every record at the sink")
        view = second.get("/checkpoints")
        states = {c["id"]: c["state"] for c in view["checkpoints"]}
        assert states[latest] == "CORRUPT"
        assert any("fails its checksum" in e["message"] for e in second.get("/exceptions"))
        assert "falling back to the previous checkpoint" in (workdir / "tmaster.log").read_text()
        _check_exact(out, n)
    except BaseException:
        dump_logs(workdir)
        raise
    finally:
        second.stop()
    with pytest.raises(HeadwaterError, match="resume it with the same file and --containers"):
        LocalCluster(TOPOLOGIES / "exactly_once.py", containers=1, env=env, workdir=workdir)


def test_parquet_sink_output_is_exact(tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    n = 20_000
    _produce(tmp_path / "log", n)
    env = {**_env(tmp_path), "HW_TEST_FORMAT": "parquet"}
    out = tmp_path / "out"

    def parquetcommitted_rows() -> list[list[Any]]:
        rows: list[list[Any]] = []
        for f in sorted(out.glob("part-*.parquet")) if out.exists() else []:
            table = pq.read_table(f)
            assert table.column_names == ["key", "seq", "count", "total"]
            rows.extend(list(r.values()) for r in table.to_pylist())
        return rows

    with running(TOPOLOGIES / "exactly_once.py", env=env):
        wait_for(lambda: len(parquetcommitted_rows()) >= n, 60, "every row in parquet files")
    jsonl = out / "as-jsonl"
    jsonl.mkdir()
    (jsonl / "part-0-0.jsonl").write_text("\n".join(json.dumps(r) for r in parquetcommitted_rows()))
    _check_exact(jsonl, n)


def test_code_that_cannot_start_backs_off_and_says_why(tmp_path: Path) -> None:
    """A bolt that raises in its constructor: the domain rolls back, but not in a tight loop,
    and the exception names the component and the cause."""
    import time

    with running(TOPOLOGIES / "broken_eo.py", containers=1, wait=False) as c:
        report = wait_for(lambda: c.get("/exceptions"), 30, "the exception report")[0]
        assert report["component"] == "broken"
        assert report["message"] == "RuntimeError: the model file is missing"
        # past the burst of rollbacks that go out at once, time the next two
        first = wait_for(
            lambda: (r := c.summary()["recoveries"]) >= 5 and r, 60, "a burst of rollbacks"
        )
        start = time.monotonic()
        wait_for(lambda: c.summary()["recoveries"] >= first + 2, 60, "two more rollbacks")
        rate = 2 / (time.monotonic() - start)
        assert rate < 1.0, f"{rate:.1f} rollbacks a second"  # unchecked it is about 3
