"""Helpers for tests that run real local clusters."""

from __future__ import annotations

import json
import os
import random
import signal
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from headwater.cloud.local import LocalCluster

from .._wait import wait_for as wait_for  # noqa: PLC0414 (re-exported for the tests)

TOPOLOGIES = Path(__file__).parent / "topologies"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def kill_at_random_moments(
    cluster: LocalCluster,
    rng: random.Random,
    kills: list[str],
    progress: Callable[[], int],
    steps: tuple[int, int],
    total: int,
) -> int:
    """SIGKILL an instance, a container or the master (``kills``, in order), each after a
    random amount of further ``progress`` (between ``steps``), never waiting past ``total``,
    counted from once the last kill's rollback has opened its epoch and the topology runs
    again: a kill made while the last one's restore is under way would be undone by the same
    restore (commits of checkpoints taken before a kill can make ``progress`` move during it).

    Returns the epoch the topology runs in after the last kill's rollback: waited for here,
    since a kill made once ``progress`` reached ``total`` can leave the old epoch running
    until the master notices it."""
    epoch = wait_for(lambda: running_epoch(cluster), 60, "the topology running")
    for kind in kills:
        target = min(progress() + rng.randint(*steps), total)

        def reached(target: int = target) -> bool:
            return progress() >= target

        wait_for(reached, 120, f"progress {target} before killing a {kind}")
        before = wait_for(lambda: running_epoch(cluster), 60, f"the topology running ({kind})")
        _kill(cluster, rng, kind)

        def rolled_back(last: int = before) -> int | None:
            epoch = running_epoch(cluster)
            return epoch if epoch is not None and epoch > last else None

        epoch = wait_for(rolled_back, 120, f"a new epoch after epoch {before}'s {kind} kill")
    return epoch


def _kill(cluster: LocalCluster, rng: random.Random, kind: str) -> None:
    if kind == "instance":
        tasks = cluster.metrics()["tasks"]
        victim = rng.choice(
            [
                p
                for p in (int(m["pid"]) for m in tasks.values() if "pid" in m)
                if psutil.pid_exists(p)
            ]
        )
        os.kill(victim, signal.SIGKILL)
    elif kind == "container":
        os.kill(
            cluster.container_procs[rng.randrange(len(cluster.container_procs))].pid,
            signal.SIGKILL,
        )
    else:
        assert cluster.tmaster is not None
        os.kill(cluster.tmaster.pid, signal.SIGKILL)


def running_epoch(cluster: LocalCluster) -> int | None:
    """The topology's epoch while it runs; None while it restores or its master restarts."""
    try:
        summary = cluster.summary()
    except OSError:
        return None
    return int(summary["epoch"]) if summary.get("state") == "RUNNING" else None


@contextmanager
def running(
    file: Path | str,
    containers: int = 2,
    env: dict[str, str] | None = None,
    wait: bool = True,
    **kw: Any,
) -> Iterator[LocalCluster]:
    """A started cluster that is always stopped; logs are printed when the test fails.

    ``wait``: until every instance has connected (off for code that cannot start)."""
    cluster = LocalCluster(file, containers=containers, env=env, **kw)
    cluster.start()
    try:
        if wait:
            cluster.wait_running(timeout=60)
        yield cluster
    except BaseException:
        dump_logs(cluster.workdir)
        raise
    finally:
        cluster.stop()


def dump_logs(workdir: Path) -> None:
    for log in sorted(workdir.glob("*.log")):
        text = log.read_text(errors="replace")
        print(f"===== {log.name} (last 4000 chars) =====\n{text[-4000:]}")


def committed_rows(directory: Path) -> list[Any]:
    """Every row a TransactionalFileSink (JSON lines) has committed in ``directory``."""
    rows: list[Any] = []
    for f in sorted(directory.glob("part-*.jsonl")) if directory.exists() else ():
        rows.extend(json.loads(line) for line in f.read_text().splitlines())
    return rows


def landed_dead_letters(out: Path) -> list[list[Any]]:
    """The IoT example's committed dead letters (``OUT/landing/dead_letters``, Parquet) as
    ``[component, reason, traceback, record]``, the record parsed back from its JSON text."""
    from headwater.common.connectors import read_landing

    rows = read_landing(out / "landing", "dead_letters")
    return [[r["component"], r["reason"], r["traceback"], json.loads(r["record"])] for r in rows]


def read_records(out: Path, component: str) -> dict[int, list[list[Any]]]:
    """Per task: the value lists a RecordBolt wrote."""
    result: dict[int, list[list[Any]]] = {}
    for f in sorted(out.glob(f"{component}-*.jsonl")):
        task = int(f.stem.rsplit("-", 1)[1])
        result[task] = [json.loads(line) for line in f.read_text().splitlines() if line]
    return result


def task_metric(cluster: LocalCluster, component: str, name: str) -> dict[int, float]:
    tasks = cluster.metrics()["tasks"]
    return {int(t): m.get(name, 0.0) for t, m in tasks.items() if m["component"] == component}


def checkpointed_state(cluster: LocalCluster, checkpoint: int, task: int) -> dict[Any, Any]:
    """The state a task snapshotted in ``checkpoint``, read beside the running cluster."""
    from headwater.common.state import CheckpointStore
    from headwater.common.state._state import load_snapshot

    container = cluster.plan.container_of(task)
    store = CheckpointStore(cluster.workdir / "state" / f"container-{container}", reader=True)
    try:
        state, _, _ = load_snapshot(store.load(checkpoint, task))
    finally:
        store.close()
    return dict(state)


def component_total(cluster: LocalCluster, component: str, name: str) -> float:
    return sum(task_metric(cluster, component, name).values())
