"""``python -m bench fleet`` at 10 agents: every phase happens, as the bench says it does.

A real ``headwater master`` and 10 simulated agents in 2 processes (``bench/fleet.py``), each
enrolled with its own key and certificate: every agent enrolled, attached (online in the
master's view), running the order (at revision 1 in the master's view, and its report saying
so answered), and attached and reporting again after the master was SIGKILLed and started
again, or, with standby masters (a real ZooKeeper and Garage), after the leader was SIGKILLed
and the standby led; the figures are there, and nothing is left running nor on disk.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import psutil
import pytest

from bench.fleet import measure

from .._workers import one_worker

# one case at a time: each checks that it leaves no work folder of the bench's behind
pytestmark = [pytest.mark.cluster, one_worker(__name__)]


@pytest.mark.parametrize(
    "failover", ["restart", pytest.param("takeover", marks=pytest.mark.zookeeper)]
)
def test_ten_agents_enrol_attach_run_the_order_and_come_back_after_a_failover(
    failover: str,
) -> None:
    before = set(Path(tempfile.gettempdir()).glob("hw-bench-fleet-*"))
    args = argparse.Namespace(
        procs=2, steady=3.0, timeout=90.0, keep=False, profile=None, failover=failover
    )
    r = measure(10, args)
    assert (r["agents"], r["procs"], r["failover"]) == (10, 2, failover)
    assert r["enrol"]["enrolled"] == 10
    assert r["attach"]["online"] == 10
    assert r["steady"]["reports"] >= 10  # every agent reports every 2 s
    assert 0 < r["steady"]["status_s"]["p50"] <= r["steady"]["status_s"]["p99"] < 3
    assert r["order"]["running"] == 10
    assert 0 < r["order"]["order_received_s"]["max"] <= r["order"]["order_s"]["max"] < 30
    assert r["storm"]["back"] == 10
    assert 0 < r["storm"]["restart_s"] < r["storm"]["reporting_s"]["max"] < 60
    for phase in ("enrol", "attach", "steady", "order", "storm"):
        assert r[phase]["rss_peak_mib"] > 20, phase  # the master was sampled throughout
    # the storm's master started (restart: a process's start) or took over: CPU it used
    assert r["storm"]["cpu_s"] > (0.1 if failover == "restart" else 0)
    assert psutil.Process(os.getpid()).children(recursive=True) == []
    assert set(Path(tempfile.gettempdir()).glob("hw-bench-fleet-*")) == before
