"""Acceptance 6: scoped backpressure drops nothing, bounds memory, spares other paths."""

from __future__ import annotations

import json
import time
import urllib.request

import psutil
import pytest

from headwater.cloud.local import LocalCluster

from ._support import TOPOLOGIES, component_total, running, task_metric, wait_for

pytestmark = pytest.mark.cluster
RSS_BOUND = 250 << 20  # every process of the cluster stays under 250 MiB


def _rate(cluster: LocalCluster, start: float, end: float) -> float:
    """steady_sink tuples per second between ``start`` and ``end`` seconds from now."""
    time.sleep(start)  # the measurement window itself, not a wait for a condition
    t0, n0 = time.monotonic(), component_total(cluster, "steady_sink", "executed")
    time.sleep(end - start)
    t1, n1 = time.monotonic(), component_total(cluster, "steady_sink", "executed")
    return (n1 - n0) / (t1 - t0)


def test_slow_bolt_throttles_only_its_own_spout() -> None:
    with running(TOPOLOGIES / "backpressure.py", env={"HW_TEST_FAST_OFF": "1"}) as c:
        baseline = _rate(c, 3, 10)
    assert baseline > 500

    peak: dict[int, int] = {}
    with running(TOPOLOGIES / "backpressure.py") as c:
        procs = [psutil.Process(pid) for pid in c.pids().values()]
        start = time.monotonic()
        window: list[float] = []
        n0 = t0 = 0.0
        while time.monotonic() - start < 20:  # the 20 s run, sampling memory
            for p in procs:
                peak[p.pid] = max(peak.get(p.pid, 0), p.memory_info().rss)
            elapsed = time.monotonic() - start
            if not window and elapsed >= 5:
                n0, t0 = component_total(c, "steady_sink", "executed"), time.monotonic()
                window.append(n0)
            time.sleep(0.5)
        loaded = (component_total(c, "steady_sink", "executed") - n0) / (time.monotonic() - t0)

        # the fast spout outran the slow bolt: both sides recorded backpressure
        metrics = c.metrics()
        assert max(m["backpressure_ms"] for m in metrics["containers"].values()) > 1000
        assert max(task_metric(c, "fast", "backpressure_ms").values()) > 1000

        req = urllib.request.Request(
            f"{c.http_address}/api/v1/topologies/backpressure/deactivate",
            method="POST",
            headers={"Authorization": f"Bearer {c.token}"},
        )
        assert json.loads(urllib.request.urlopen(req, timeout=5).read())["state"] == "PAUSED"

        # nothing dropped: once the spouts pause, everything emitted gets processed.
        # Drained means exact equality. A slow bolt on a loaded machine may take long to
        # drain what was in flight, so wait while it makes progress; lost tuples would show
        # as no progress with the counts unequal, a pause not heard as the fast spout's
        # count still rising. Either fails at once with the counts' history.
        paused_at = time.monotonic()
        trail: list[tuple[float, float, float]] = []  # (s after deactivate, emitted, executed)

        def drained() -> bool:
            e, x = component_total(c, "fast", "emitted"), component_total(c, "slow", "executed")
            now = time.monotonic() - paused_at
            if not trail or trail[-1][1:] != (e, x):
                trail.append((round(now, 1), e, x))
            if e > 0 and x == e:
                return True
            settled = [t for t in trail if t[0] <= 20]  # metrics lag a few seconds at most
            assert now <= 20 or e == settled[-1][1], (
                f"the fast spout kept emitting after it was paused: {trail[-8:]}"
            )
            assert now - trail[-1][0] < 30, f"the slow bolt stopped: {trail[-8:]}"
            return False

        try:
            wait_for(drained, 150, "the slow bolt to drain what was emitted", interval=0.5)
        except AssertionError as exc:
            rss = {p.pid: p.memory_info().rss >> 20 for p in procs if p.is_running()}
            raise AssertionError(
                f"{exc}: (s after the pause, emitted, executed) {trail}; RSS MiB {rss}; "
                f"containers {c.metrics()['containers']}"
            ) from None
    assert loaded >= 0.8 * baseline, (loaded, baseline)
    assert max(peak.values()) < RSS_BOUND, {pid: rss >> 20 for pid, rss in peak.items()}
