"""A worker finds a SIGSTOPped container of its own and restarts it.

A container touches a beat file every second; a worker kills one that has not for
15 s (stopped or hung: alive, so never seen as dead before) and restarts it; the
exactly-once domain rolls back, and every record comes out once.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from .._wait import wait_for
from ..integration._daemons import Daemons
from ..integration._support import TOPOLOGIES, committed_rows
from ..integration.test_exactly_once import KEYS, _check_exact, _produce
from ._report import record

pytestmark = pytest.mark.cluster


def _container(worker: psutil.Process, c: int) -> psutil.Process | None:
    for p in worker.children():
        try:
            cmd = p.cmdline()
        except psutil.Error:  # gone, or a killed one not reaped yet (a zombie)
            continue
        if "--container" in cmd and cmd[cmd.index("--container") + 1] == str(c):
            return p
    return None


def test_a_stopped_container_on_a_worker_is_killed_and_restarted(
    daemons: Daemons, tmp_path: Path
) -> None:
    n = 20_000
    _produce(tmp_path / "log", n)
    out = tmp_path / "out"
    env = {"HW_TEST_LOG": str(tmp_path / "log"), "HW_TEST_OUT": str(out), "HW_TEST_RATE": "500"}
    daemons.start_master()
    worker = daemons.start_worker("w1", env)
    daemons.cli("submit", str(TOPOLOGIES / "exactly_once.py"), "--containers", "2")
    wait_for(lambda: len(committed_rows(out)) >= 1000, 90, "some committed output")
    stopped = wait_for(lambda: _container(worker, 1), 10, "container 1")
    os.kill(stopped.pid, signal.SIGSTOP)
    t0 = time.monotonic()
    detect = recover = -1.0  # -1: never (the test fails before recording)
    try:

        def restarted() -> psutil.Process | None:
            p = _container(worker, 1)
            return p if p is not None and p.pid != stopped.pid else None

        fresh = wait_for(restarted, 60, "container 1 restarted")
        detect = time.monotonic() - t0
        assert not stopped.is_running() or stopped.status() == psutil.STATUS_ZOMBIE
        before = len(committed_rows(out))
        wait_for(lambda: len(committed_rows(out)) > before, 60, "output to move on")
        recover = time.monotonic() - t0
        print(f"restarted as {fresh.pid} after {detect:.1f}s")
    finally:
        if stopped.is_running():
            os.kill(stopped.pid, signal.SIGCONT)
    try:
        wait_for(lambda: len(committed_rows(out)) >= n, 180, "every record at the sink")
    finally:
        counts = Counter((r[0], r[1]) for r in committed_rows(out))
        want = {(f"k{i % KEYS}", i // KEYS) for i in range(n)}
        record(
            "worker: a SIGSTOPped container (exactly once)",
            detect_s=round(detect, 1),
            recover_s=round(recover, 1),
            readings=n,
            lost=len(want - set(counts)),
            duplicated=sum(k - 1 for k in counts.values()),
        )
    _check_exact(out, n)
