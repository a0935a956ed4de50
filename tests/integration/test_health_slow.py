"""Issue 35's slow-instance scenario for the health manager, with real daemons.

``topologies/slow_task.py``: ``work`` costs COST s per record (a sleep) on two tasks under a
shuffle grouping, fed from a log written at RATE records/s (each task about half busy).
Once it runs, one ``work`` task's process is throttled: SIGSTOPped for STOP_S of every
PERIOD_S (then SIGCONTed), from a thread of the test, as a host whose CPU is taken by others
would run it. That is the honest slow host for the health manager's measure: a task's busy
time is wall time around each frame's processing (``common/runtime/_executor.py``), so the
time a loaded task spends stopped mid-record counts as busy, as stolen CPU would; its true
rate (records per busy second) drops to about (1 - STOP_S / PERIOD_S) of its sibling's. (A
task that is not loaded, stopped between records, catches up after and is not slow: the
throttle leaves it about RATE / 2 * COST / (1 - STOP_S / PERIOD_S) > 1 busy, so it is
loaded.) The throttle follows the process, not the task: a restarted task is healthy.

The master samples every second and the policy is ``auto`` (at most 4 tasks): the manager
must diagnose ``slow-instance`` on ``work`` for that task, with its evidence, and restart
that task (a ``RestartTasks`` to its container: in exactly-once mode a rollback), never
rescale ``work``; after the restart the symptom clears (no diagnosis of ``work``; the task's
true rate is its sibling's again). Every record is counted once, exactly.

Measured (``PYTHONPATH=$PWD timeout 300 python -m pytest tests/integration/test_health_slow.py
-x -q -s`` on a shared 2-core machine, load average 2 to 42; ``-s`` prints a ``SLOW TASK``
summary): in each of fifteen runs one action, the restart of the throttled task, 4.6 to 9.1 s
after the throttle began, no diagnosis of ``work`` but ``slow-instance`` in between; the
task's true rate 18-29 records per busy second while throttled, its sibling's 79-98, both
the same after the restart (86-98); 28 to 63 s a run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil
import pytest

from headwater.common.connectors._log_spout import append_records

from ._daemons import Daemons
from ._support import TOPOLOGIES, committed_rows, wait_for
from .test_health_scenarios import PAD, Writer

pytestmark = pytest.mark.cluster
KEYS = 64
COST = 0.01  # s per record: one task keeps up with about 100 records/s
RATE = 90  # records/s: each of the two tasks about half busy (one task would not do)
STOP_S, PERIOD_S = 0.16, 0.2  # the throttled process is stopped 80% of the time
WINDOW_S = 5.0  # the restarted task is read over this long (the manager's rate window)
BASE = "/api/v1/topologies/slowtask"


class Throttle(threading.Thread):
    """SIGSTOP ``pid`` for ``STOP_S`` of every ``PERIOD_S`` until stopped or the process is
    gone (psutil checks it is the same process: a reused pid is never signalled)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.proc, self.done, self.bursts = psutil.Process(pid), threading.Event(), 0

    def run(self) -> None:
        try:
            while not self.done.is_set():
                self.proc.suspend()
                try:
                    time.sleep(STOP_S)
                finally:
                    self.proc.resume()
                self.bursts += 1
                time.sleep(PERIOD_S - STOP_S)
        except psutil.NoSuchProcess:
            pass  # restarted: the new process is not throttled


def _work_tasks(view: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(t): v for t, v in view["tasks"].items() if v.get("component") == "work"}


def _true_rate(a: dict[str, Any], b: dict[str, Any]) -> float:
    """Records per busy second between two readings of a task."""
    busy = (float(b.get("busy_ns", 0)) - float(a.get("busy_ns", 0))) / 1e9
    done = float(b.get("executed", 0)) - float(a.get("executed", 0))
    return done / busy if busy > 0 else 0.0


Row = tuple[float, dict[int, dict[str, Any]], dict[str, Any]]  # when, work's tasks, health


def _restarted(trace: list[Row], task: int, old_pid: Any) -> list[Row]:
    """The readings since ``task``'s new process first reported (a reading whose counters
    moved since the previous one, under a pid other than ``old_pid``)."""
    for i in range(1, len(trace)):
        (_, before, _), (_, now, _) = trace[i - 1], trace[i]
        if now.get(task, {}).get("pid", old_pid) != old_pid and all(
            float(now[t].get("executed", 0)) > float(before.get(t, {}).get("executed", 0))
            for t in now
        ):
            return trace[i:]
    return []


def _rates(rows: list[Row]) -> dict[str, Any]:
    """Over a run of readings: each work task's true rate, and work's records per second."""
    if len(rows) < 2:
        return {}
    (t0, a, _), (t1, b, _) = rows[0], rows[-1]
    done = sum(float(b[t]["executed"]) - float(a[t]["executed"]) for t in b)
    return {
        "seconds": round(t1 - t0, 1),
        "true_rps": {t: round(_true_rate(a[t], b[t]), 1) for t in sorted(b)},
        "work_rps": round(done / (t1 - t0), 1) if t1 > t0 else 0.0,
    }


def _health_json(daemons: Daemons) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "headwater", "health", "slowtask", "--json"],
        env={**os.environ, "HEADWATER_MASTER": daemons.http, "HEADWATER_TOKEN": daemons.token},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    report: dict[str, Any] = json.loads(out)
    return report


def test_a_slow_task_is_restarted_not_rescaled(daemons: Daemons, tmp_path: Path) -> None:
    env = {
        "HW_TEST_LOG": str(tmp_path / "log"),
        "HW_TEST_OUT": str(tmp_path / "out"),
        "HW_TEST_COST": str(COST),
    }
    daemons.start_master(extra=("--health-interval", "1"))
    daemons.start_worker("w1", env)
    wait_for(lambda: any(n["online"] for n in daemons.api("/api/v1/nodes")), 30, "a worker")
    append_records(tmp_path / "log", 0, [[f"k{i}", i, PAD] for i in range(KEYS)])
    daemons.cli("submit", str(TOPOLOGIES / "slow_task.py"))

    def work() -> dict[int, dict[str, Any]]:
        return _work_tasks(daemons.api(f"{BASE}/metrics"))

    def reporting() -> bool:
        tasks = daemons.api(f"{BASE}/metrics")["tasks"].values()
        return len(tasks) == 5 and all("busy_ns" in v and "pid" in v for v in tasks)

    wait_for(reporting, 60, "every task reporting")
    wait_for(lambda: committed_rows(tmp_path / "out" / "counter"), 60, "committed rows")
    writer = Writer(tmp_path / "log")
    writer.rate = float(RATE)
    writer.start()
    slow = min(work())  # the task to throttle, and its sibling
    sibling = max(work())
    trace: list[Row] = []

    def sample() -> dict[str, Any]:
        health: dict[str, Any] = daemons.api(f"{BASE}/health")
        trace.append((time.time(), work(), health))
        return health

    def restarts(health: dict[str, Any]) -> list[dict[str, Any]]:
        return [t for t in health["taken"] if t["action"]["kind"] == "restart"]

    old_pid = work()[slow]["pid"]
    throttle = Throttle(int(old_pid))
    try:

        def baseline() -> bool:
            health = sample()
            return trace[-1][0] - trace[0][0] >= WINDOW_S and not health["diagnoses"]

        wait_for(baseline, 30, "a healthy baseline", interval=1.0)
        started = time.time()
        throttle.start()
        wait_for(lambda: restarts(sample()), 45, "the slow task restarted", interval=1.0)
        restarted = time.time()

        def healthy() -> bool:
            health = sample()
            rows = _restarted(trace, slow, old_pid)
            if not rows or rows[-1][0] - rows[0][0] < WINDOW_S:
                return False
            (_, a, _), (_, b, _) = rows[0], rows[-1]
            mine, theirs = _true_rate(a[slow], b[slow]), _true_rate(a[sibling], b[sibling])
            return mine >= 0.7 * theirs and not any(
                d["component"] == "work" for d in health["diagnoses"]
            )

        wait_for(healthy, 45, "the symptom cleared", interval=1.0)
        cleared = time.time()
    finally:
        throttle.done.set()
        if throttle.is_alive():
            throttle.join()
        writer.done.set()
        writer.join()
        for at, tasks, health in trace:
            kinds = [(d["kind"], d["component"], d["tasks"]) for d in health["diagnoses"]]
            print(
                f"TRACE {at:.1f} "
                + " ".join(
                    f"{t}:pid={v.get('pid')},executed={v.get('executed')},"
                    f"busy_s={float(v.get('busy_ns', 0)) / 1e9:.2f}"
                    for t, v in sorted(tasks.items())
                )
                + f" diagnoses={kinds} taken={len(health['taken'])}"
            )
    n = writer.n
    report = _health_json(daemons)
    revisions = daemons.api(f"{BASE}/revisions")["revisions"]
    taken = report["taken"]
    throttled = [
        r for r in trace if r[0] >= started + 1 and r[1].get(slow, {}).get("pid") == old_pid
    ]
    seen = [  # each diagnosis of work the report showed from the throttle to the restart
        (d["kind"], tuple(d["tasks"]))
        for at, _, health in trace
        if started <= at <= restarted
        for d in health["diagnoses"]
        if d["component"] == "work"
    ]
    summary = {
        "throttled_task": slow,
        "bursts": throttle.bursts,
        "symptom_to_restart_s": round(taken[0]["at"] - started, 1) if taken else None,
        "restart_to_cleared_s": round(cleared - restarted, 1),
        "before": _rates([r for r in trace if r[0] < started]),
        "throttled": _rates(throttled),
        "after": _rates(_restarted(trace, slow, old_pid)),
        "taken": [
            (t["action"]["kind"], t["action"]["tasks"], t["action"]["reason"]) for t in taken
        ],
        "revisions": [(r["revision"], r["author"]) for r in revisions],
        "seen": seen,
    }
    print("SLOW TASK", json.dumps(summary))

    # the slow task, diagnosed as such (never as under-provisioned), with its evidence, is
    # restarted: one action, no rescale
    assert seen and set(seen) == {("slow-instance", (slow,))}, summary
    assert [t["action"]["kind"] for t in taken] == ["restart"], summary
    restart = taken[0]
    assert restart["action"]["component"] == "work" and restart["action"]["tasks"] == [slow]
    assert restart["outcome"] == "applied", restart
    diagnosis = restart["action"]["diagnosis"]
    assert diagnosis["kind"] == "slow-instance" and diagnosis["tasks"] == [slow], diagnosis
    evidence = diagnosis["evidence"]
    assert evidence["task_true_processing"] < 0.5 * evidence["siblings_median"], evidence
    assert [r["author"] for r in revisions] == [""], revisions  # the submission only
    assert not report["blacklisted"], report
    assert sorted(work()) == [slow, sibling]  # work still runs on two tasks

    # every record counted once at the sink, the counts per key exact
    wait_for(lambda: len(committed_rows(tmp_path / "out" / "counter")) >= n, 120, "every record")
    rows = committed_rows(tmp_path / "out" / "counter")
    assert sorted(r[1] for r in rows) == list(range(n)), "gaps or duplicates"
    by_key: dict[str, list[list[Any]]] = defaultdict(list)
    for r in rows:
        by_key[r[0]].append(r)
    assert {k: len(v) for k, v in by_key.items()} == {
        f"k{i}": len(range(i, n, KEYS)) for i in range(min(KEYS, n))
    }
    for key, krows in by_key.items():
        krows.sort(key=lambda r: r[1])
        assert [r[2] for r in krows] == list(range(1, len(krows) + 1)), f"{key}: count broke"
