"""A SIGSTOPped instance and a SIGSTOPped stream manager are found by heartbeats and restarted.

A stopped process is alive, so nothing that waits for exits sees it: before, the
topology stopped making progress for good (the exactly-once checkpoint in flight
timed out again and again) with nothing restarted. Now an instance's gateway thread
beats every second and its container kills it after 6 s of silence; a container
heartbeats the topology master every second and the launcher (`headwater run`,
``LocalCluster.supervise``) kills it after 10 s of silence. Either is then restarted
and the domain rolls back: every record still comes out exactly once.
"""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import psutil
import pytest

from headwater.cloud.local import LocalCluster

from .._wait import wait_for
from ..integration._support import TOPOLOGIES, committed_rows, dump_logs
from ..integration.test_exactly_once import KEYS, _check_exact, _produce
from ._report import record

pytestmark = pytest.mark.cluster


@pytest.mark.parametrize("target", ["instance", "stream manager"])
def test_a_stopped_process_is_found_by_heartbeats_and_restarted(
    tmp_path: Path, target: str
) -> None:
    n = 20_000
    _produce(tmp_path / "log", n)
    out = tmp_path / "out"
    env = {"HW_TEST_LOG": str(tmp_path / "log"), "HW_TEST_OUT": str(out), "HW_TEST_RATE": "800"}
    cluster = LocalCluster(TOPOLOGIES / "exactly_once.py", containers=2, env=env)
    cluster.start()
    cluster.supervise()  # what `headwater run` does
    stopped = 0
    try:
        cluster.wait_running(timeout=60)
        wait_for(lambda: len(committed_rows(out)) >= 1000, 60, "some committed output")
        epoch = cluster.summary()["epoch"]
        if target == "instance":
            stopped = next(
                int(m["pid"])
                for m in cluster.metrics()["tasks"].values()
                if m["component"] == "tally" and "pid" in m
            )
        else:
            stopped = cluster.container_procs[1].pid
        os.kill(stopped, signal.SIGSTOP)
        t0 = time.monotonic()
        wait_for(lambda: cluster.summary()["epoch"] > epoch, 60, "a rollback")
        detect = time.monotonic() - t0
        assert not _alive(stopped), "the stopped process is still there"
        wait_for(lambda: cluster.summary()["state"] == "RUNNING", 60, "the topology to run")
        before = len(committed_rows(out))
        wait_for(lambda: len(committed_rows(out)) > before, 60, "output to move on")
        recover = time.monotonic() - t0
        try:
            wait_for(lambda: len(committed_rows(out)) >= n, 120, "every record at the sink")
        finally:
            counts = Counter((r[0], r[1]) for r in committed_rows(out))
            want = {(f"k{i % KEYS}", i // KEYS) for i in range(n)}
            record(
                f"a SIGSTOPped {target} (exactly once)",
                detect_s=round(detect, 1),
                recover_s=round(recover, 1),
                readings=n,
                lost=len(want - set(counts)),
                duplicated=sum(k - 1 for k in counts.values()),
            )
        _check_exact(out, n)
        restarts = cluster.metrics()["components"]["tally"]["restarts"]
        assert target != "instance" or restarts >= 1
    except BaseException:
        dump_logs(cluster.workdir)
        raise
    finally:
        if stopped and _alive(stopped):
            os.kill(stopped, signal.SIGCONT)
        cluster.stop()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
