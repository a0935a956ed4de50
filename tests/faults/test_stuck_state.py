"""A topology stuck in a state says so: how long, and what it waits for.

A container is frozen (SIGSTOP: alive, silent) and an instance elsewhere is killed,
so the exactly-once domain rolls back and the restore waits for the frozen
container. Nothing is lost, so nothing else would show it: the topology master's
status (summary, metrics, `headwater status`) must say RESTORING for how long and
name the container it waits for. Thawed, the topology finishes exactly once.
(No supervisor runs here: `headwater run` would also restart a silent container.)
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from .._wait import wait_for
from ..integration._support import TOPOLOGIES, committed_rows, running
from ..integration.test_exactly_once import KEYS, _check_exact, _produce
from ._report import record

pytestmark = pytest.mark.cluster


def test_a_restore_waiting_for_a_frozen_container_says_so(tmp_path: Path) -> None:
    n = 20_000
    _produce(tmp_path / "log", n)
    out = tmp_path / "out"
    env = {"HW_TEST_LOG": str(tmp_path / "log"), "HW_TEST_OUT": str(out), "HW_TEST_RATE": "1000"}
    with running(TOPOLOGIES / "exactly_once.py", containers=2, env=env) as c:
        wait_for(lambda: len(committed_rows(out)) >= 1000, 60, "some committed output")
        frozen = c.container_procs[1]
        victim = next(
            int(m["pid"])
            for m in c.metrics()["tasks"].values()
            if m["container"] == 0 and "pid" in m
        )
        os.kill(frozen.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            os.kill(victim, signal.SIGKILL)

            def says_why() -> dict[str, object] | None:
                s = c.summary()["status"]
                waits = " | ".join(s["waiting_for"])
                ok = (
                    s["state"] == "RESTORING"
                    and "container 1 has not restored" in waits
                    and "container 1 has sent no heartbeat" in waits
                )
                return s if ok else None

            status = wait_for(says_why, 30, "the master to say what the restore waits for")
            detect = time.monotonic() - t0
            assert c.metrics()["status"]["state"] == "RESTORING"
            wait_for(lambda: c.summary()["status"]["for_s"] >= 3, 30, "time to pass")
            cmd = [sys.executable, "-m", "headwater", "status"]
            shown = subprocess.run(
                cmd, capture_output=True, check=True, text=True, timeout=30
            ).stdout
            assert "state RESTORING  for " in shown, shown
            assert "waiting for: container 1 has not restored checkpoint" in shown, shown
            assert "waiting for: container 1 has sent no heartbeat for " in shown, shown
            print(status)
        finally:
            os.kill(frozen.pid, signal.SIGCONT)
        t1 = time.monotonic()
        wait_for(lambda: c.summary()["state"] == "RUNNING", 60, "the restore to finish")
        recover = time.monotonic() - t1
        assert c.summary()["status"]["waiting_for"] == []
        try:
            wait_for(lambda: len(committed_rows(out)) >= n, 120, "every record at the sink")
        finally:
            rows = committed_rows(out)
            counts = Counter((r[0], r[1]) for r in rows)
            want = {(f"k{i % KEYS}", i // KEYS) for i in range(n)}
            record(
                "a frozen container during a restore (reported, then thawed)",
                detect_s=round(detect, 1),
                recover_s=round(recover, 1),
                readings=n,
                lost=len(want - set(counts)),
                duplicated=sum(k - 1 for k in counts.values()),
            )
        _check_exact(out, n)
