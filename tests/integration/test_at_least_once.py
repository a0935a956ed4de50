"""Acceptance 5: under at-least-once, failed and lost tuples are replayed to the sink."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from ._support import TOPOLOGIES, component_total, read_records, running, task_metric, wait_for

pytestmark = pytest.mark.cluster


def _sink_seqs(out: Path) -> list[int]:
    return sorted(v[0] for vs in read_records(out, "sink").values() for v in vs)


def test_bolt_failing_every_second_tuple_once(out_dir: Path) -> None:
    n = 2000
    env = {
        "HW_TEST_OUT": str(out_dir),
        "HW_TEST_N": str(n),
        "HW_TEST_FLAKY": "1",
        "HW_TEST_TIMEOUT": "30",
    }  # no timeouts: every fail is the relay's
    with running(TOPOLOGIES / "flaky.py", env=env) as c:
        wait_for(lambda: set(_sink_seqs(out_dir)) == set(range(n)), 90, "every seq at the sink")
        wait_for(lambda: component_total(c, "seq", "acked") == n, 30, "every tree acked")
        failed = component_total(c, "seq", "failed")
        # the relay's counts reach the topology master with its next metrics report
        wait_for(lambda: component_total(c, "relay", "failed") == failed, 30, "the relay's fails")
        assert failed == pytest.approx(n / 2, abs=2)  # every second new tuple, per relay task
        assert component_total(c, "seq", "user:replayed") == failed
    assert _sink_seqs(out_dir) == list(range(n))  # failed before the sink: no duplicates


def test_a_record_user_code_raises_on_once_is_retried(out_dir: Path) -> None:
    """A bolt's ``process`` raises on one record once: the retry works, nothing restarts."""
    n = 1000
    env = {"HW_TEST_OUT": str(out_dir), "HW_TEST_N": str(n), "HW_TEST_RAISE_AT": "500"}
    with running(TOPOLOGIES / "flaky.py", env=env) as c:
        wait_for(lambda: set(_sink_seqs(out_dir)) == set(range(n)), 90, "every seq at the sink")
        wait_for(lambda: component_total(c, "relay", "record_retries") == 1, 30, "the retry")
        assert component_total(c, "relay", "restarts") == 0
        assert component_total(c, "relay", "dead_letters") == 0
        assert component_total(c, "seq", "failed") == 0
        assert c.get("/exceptions") == []
    assert _sink_seqs(out_dir) == list(range(n))


def test_exception_in_a_spout_is_reported_and_the_instance_restarts(out_dir: Path) -> None:
    """``next_tuple`` is no record: the instance restarts, counted and listed."""
    n = 1000
    env = {
        "HW_TEST_OUT": str(out_dir),
        "HW_TEST_N": str(n),
        "HW_TEST_SPOUT_RAISE_AT": "500",
        "HW_TEST_TIMEOUT": "4",
    }
    with running(TOPOLOGIES / "flaky.py", env=env) as c:
        wait_for(lambda: set(_sink_seqs(out_dir)) == set(range(n)), 90, "every seq at the sink")
        (report,) = wait_for(lambda: c.get("/exceptions"), 30, "the exception report")
        assert report["component"] == "seq"
        assert report["message"] == "RuntimeError: seq cannot read 500"
        assert "Traceback (most recent call last)" in report["traceback"]
        assert 'raise RuntimeError(f"seq cannot read {seq}")' in report["traceback"]
        wait_for(lambda: component_total(c, "seq", "exceptions") == 1, 30, "the count")
        assert component_total(c, "seq", "restarts") == 1
        task = report["task"]
        log = (c.workdir / f"task-{task}.log").read_text()
        assert "RuntimeError: seq cannot read 500" in log


def test_a_component_that_fails_to_start_is_named_in_its_report(out_dir: Path) -> None:
    env = {"HW_TEST_OUT": str(out_dir), "HW_TEST_N": "100", "HW_TEST_RAISE_IN_INIT": "1"}
    with running(TOPOLOGIES / "flaky.py", env=env) as c:
        wait_for(lambda: set(_sink_seqs(out_dir)) == set(range(100)), 60, "every seq at the sink")
        (report,) = wait_for(lambda: c.get("/exceptions"), 30, "the exception report")
        assert (report["component"], report["message"]) == (
            "relay",
            "RuntimeError: relay cannot start",
        )


def test_bolt_sigkilled_mid_run(out_dir: Path) -> None:
    n = 3000
    env = {
        "HW_TEST_OUT": str(out_dir),
        "HW_TEST_N": str(n),
        "HW_TEST_RATE": "300",
        "HW_TEST_TIMEOUT": "4",
        # slower than the spouts: a relay's inbox holds tuples when it is killed, so some
        # trees are lost and replayed (an idle relay holds none: it flushes and acks at once)
        "HW_TEST_RELAY_MS": "5",
    }
    with running(TOPOLOGIES / "flaky.py", env=env) as c:
        wait_for(lambda: len(_sink_seqs(out_dir)) > n // 4, 60, "a quarter at the sink")
        pids = {
            t: int(m["pid"]) for t, m in c.metrics()["tasks"].items() if m["component"] == "relay"
        }
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)
        assert len(_sink_seqs(out_dir)) < n  # killed mid-run
        wait_for(
            lambda: all(v >= 1 for v in task_metric(c, "relay", "restarts").values()),
            30,
            "the container to restart the relays",
        )
        wait_for(lambda: set(_sink_seqs(out_dir)) == set(range(n)), 90, "every seq at the sink")
        wait_for(lambda: component_total(c, "seq", "acked") == n, 30, "every tree acked")
        new_pids = {
            t: int(m["pid"]) for t, m in c.metrics()["tasks"].items() if m["component"] == "relay"
        }
        assert set(new_pids.values()).isdisjoint(pids.values())
        assert component_total(c, "seq", "user:replayed") >= 1
