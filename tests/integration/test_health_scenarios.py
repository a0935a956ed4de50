"""Issue 35's acceptance scenarios for the health manager, with real daemons.

A load step (``topologies/load_step.py``): ``counter`` costs COST s per record (a sleep: busy
time counts it), so one task keeps up with about 1 / COST records/s; the log is written at
RATE records/s (one task about two thirds busy), then at 2 RATE, which one task cannot keep up
with. The master samples every second (``--health-interval 1``) and the topology's policy
is ``auto`` (at most 4 tasks, cooldown 20 s): the health manager must rescale ``counter``
with at most 2 actions, after which the spout is no longer held back; every record is
counted once, exactly (exactly-once mode).

Measured (``bench/RESULTS.md``, "Self-regulation: a load step (issue 35)", with
``PYTHONPATH=$PWD timeout 400 python -m pytest tests/integration/test_health_scenarios.py
-x -q -s`` on a shared 2-core machine): in each of nine runs one action, ``counter`` 1 -> 2
tasks (once 1 -> 3, under a load average of 18: the demand read over the manager's 5 s window
is 80 +- 16 records/s), seen applied 7 to 23 s after the step (BOUND_S allows 45); the
counter at 37-42 records/s before the step and 78-85 after; the spout never held back (the
manager acted before the small queues filled); every record counted once. The test prints
its trace and a ``LOAD STEP`` summary (``-s``). The report's rates of the rescale (one run,
load average 10): before 61 records/s processed, busy 94%; after (the 2 tasks' first 5 s)
135 records/s, busy 84%, catching up on the queued records.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from bench.health_load import Writer as HealthWriter
from headwater.common.connectors._log_spout import append_records

from ._daemons import Daemons
from ._support import TOPOLOGIES, committed_rows, wait_for

pytestmark = pytest.mark.cluster
KEYS = 64
COST = 0.015  # s per record: one task keeps up with about 65 records/s
RATE = 40  # records/s before the step, 2 * RATE after
PAD = "x" * 256
BEFORE_S, AFTER_S = 15.0, 75.0  # at RATE once the topology runs, then at 2 RATE
SETTLED_S = 15.0  # the last window of the run, backpressure must not grow in it
BOUND_S = 45.0  # from the step to the last rescale applied, at most


def Writer(log: Path) -> HealthWriter:
    """The bench's writer of [key, seq, pad] records (``bench/health_load.py``: one writer kept
    open, ``rate`` set as it goes), starting at RATE records/s."""
    return HealthWriter(log, RATE)


def _sum(view: dict[str, Any], component: str, key: str) -> float:
    return sum(
        float(v.get(key, 0.0)) for v in view["tasks"].values() if v.get("component") == component
    )


def _health_json(daemons: Daemons) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-m", "headwater", "health", "loadstep", "--json"],
        env={**os.environ, "HEADWATER_MASTER": daemons.http, "HEADWATER_TOKEN": daemons.token},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    report: dict[str, Any] = json.loads(out)
    return report


def test_a_load_step_is_resolved_by_at_most_two_rescales(daemons: Daemons, tmp_path: Path) -> None:
    env = {
        "HW_TEST_LOG": str(tmp_path / "log"),
        "HW_TEST_OUT": str(tmp_path / "out"),
        "HW_TEST_COST": str(COST),
    }
    daemons.start_master(extra=("--health-interval", "1"))
    daemons.start_worker("w1", env)
    wait_for(lambda: any(n["online"] for n in daemons.api("/api/v1/nodes")), 30, "a worker")
    append_records(tmp_path / "log", 0, [[f"k{i}", i, PAD] for i in range(KEYS)])
    daemons.cli("submit", str(TOPOLOGIES / "load_step.py"))

    def metrics() -> dict[str, Any]:
        view: dict[str, Any] = daemons.api("/api/v1/topologies/loadstep/metrics")
        return view

    def reporting() -> bool:
        tasks = metrics()["tasks"].values()
        return len(tasks) == 3 and all("busy_ns" in v for v in tasks)

    wait_for(reporting, 60, "every task reporting")
    wait_for(lambda: committed_rows(tmp_path / "out" / "counter"), 60, "committed rows")
    writer = Writer(tmp_path / "log")  # once the topology runs: no backlog to catch up with
    writer.start()
    # t, counter executed, spout and counter held back (ms), counter busy (s), revision
    trace: list[tuple[float, float, float, float, int]] = []

    def sample() -> None:
        m = metrics()
        current = int(daemons.api("/api/v1/topologies/loadstep/revisions")["current"])
        trace.append(
            (
                time.monotonic(),
                _sum(m, "counter", "executed"),
                _sum(m, "log", "backpressure_ms") + _sum(m, "counter", "backpressure_ms"),
                _sum(m, "counter", "busy_ns") / 1e9,
                current,
            )
        )

    try:
        end = time.monotonic() + BEFORE_S
        while time.monotonic() < end:  # the steady rate before the step
            sample()
            time.sleep(1)
        writer.rate, step = 2.0 * RATE, time.monotonic()
        while time.monotonic() < step + AFTER_S:
            sample()
            time.sleep(1)
    finally:
        writer.done.set()
        writer.join()
        for row in trace:
            at, executed, held, busy, rev = row
            print(
                f"TRACE {at:.1f} executed={executed:.0f} held_ms={held:.0f} "
                f"busy_s={busy:.1f} rev={rev}"
            )
    n = writer.n
    applied: dict[int, float] = {}  # revision -> seconds from the step to its first sight
    for row in trace:
        applied.setdefault(row[4], row[0] - step)
    steady = [row for row in trace if step - BEFORE_S + 3 <= row[0] < step]
    settled = [row for row in trace if row[0] >= trace[-1][0] - SETTLED_S]
    revisions = daemons.api("/api/v1/topologies/loadstep/revisions")["revisions"]
    report = _health_json(daemons)
    before = (steady[-1][1] - steady[0][1]) / (steady[-1][0] - steady[0][0])
    after = (settled[-1][1] - settled[0][1]) / (settled[-1][0] - settled[0][0])
    held_ms = settled[-1][2] - settled[0][2]
    summary = {
        "applied_s": {r: round(s, 1) for r, s in applied.items()},
        "before_rps": round(before, 1),
        "after_rps": round(after, 1),
        "held_back_ms_last_15s": round(held_ms),
        "revisions": [(r["revision"], r["author"], r["reason"]) for r in revisions],
        "taken": [
            (t["action"]["kind"], t["action"]["parallelism"], t["action"]["reason"])
            for t in report["taken"]
        ],
        "rates": [(t["rates_before"], t["rates_after"]) for t in report["taken"]],
    }
    print("LOAD STEP", json.dumps(summary))

    # 1 or 2 rescales by the health manager, each with its reason, none before the step
    ours = [r for r in revisions if r["author"] == "health-manager"]
    assert 1 <= len(ours) <= 2 and len(revisions) == 1 + len(ours), summary
    assert all(r["status"] == "applied" and r["reason"] for r in ours), revisions
    assert all(0 < applied[r["revision"]] <= BOUND_S for r in ours), summary
    taken = [t for t in report["taken"] if t["action"]["kind"] == "rescale"]
    assert [t["revision"] for t in taken] == [r["revision"] for r in ours], report["taken"]
    assert all(t["outcome"] == "applied" for t in taken), report["taken"]
    assert taken[-1]["action"]["parallelism"] >= 2
    # each with counter's rates when it was taken and a window after it was applied (30 s
    # ago at least): the first rescale let it process more
    assert all(t["rates_before"] and t["rates_after"] for t in taken), summary
    assert taken[0]["rates_after"]["processed"] > taken[0]["rates_before"]["processed"], summary
    # then neither the spout nor the counter is held back, and the counter keeps up with 2 RATE
    assert held_ms < 0.05 * SETTLED_S * 1000, summary
    assert after >= 0.9 * 2 * RATE, summary

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
