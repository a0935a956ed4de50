"""headwater.common.control._crashloop: what counts as a crash loop, and when it ends."""

from __future__ import annotations

from headwater.common._clock import ManualClock
from headwater.common._health import FAILED, Health
from headwater.common.control import (
    CrashLoopDetector,
    CrashLoopPolicy,
    CrashLoopWatch,
)


def test_failures_within_the_window_make_a_loop_and_a_quiet_window_ends_it() -> None:
    clock = ManualClock(100.0)
    d = CrashLoopDetector(CrashLoopPolicy(failures=3, window_s=10.0), clock)
    assert d.failed("component 'a'", "exit 1") is None
    clock.advance(4)
    assert d.failed("component 'a'", "exit 1") is None
    assert d.failed("component 'b'", "exit 2") is None  # counted apart
    clock.advance(4)
    loop = d.failed("component 'a'", "exit 3")
    assert loop is not None
    assert (loop.key, loop.failures, loop.over_s, loop.reason) == (
        "component 'a'",
        3,
        8.0,
        "exit 3",
    )
    assert loop.describe() == "component 'a' is crash-looping: 3 failures in 8s"
    assert set(d.loops()) == {"component 'a'"}
    clock.advance(10.5)  # a whole window without a failure
    assert d.loops() == {}


def test_failures_spread_wider_than_the_window_are_no_loop() -> None:
    clock = ManualClock(100.0)
    d = CrashLoopDetector(CrashLoopPolicy(failures=3, window_s=10.0), clock)
    for _ in range(6):
        assert d.failed("container 1", "exited with -9") is None
        clock.advance(6)  # every 6 s: three span 12 s
    assert d.loops() == {}


def test_the_watch_reports_a_loop_in_a_nodes_health_and_clears_it() -> None:
    clock = ManualClock(100.0)
    health = Health("worker-1")
    watch = CrashLoopWatch(health, CrashLoopPolicy(failures=2, window_s=5.0), clock)
    watch.failed("container 0 of 'wc'", "exited with 1")
    assert health.state == "ok"
    watch.failed("container 0 of 'wc'", "exited with 1")
    assert health.level is FAILED
    assert health.reasons() == [
        "crash loop: container 0 of 'wc': failing again and again (2 failures within 5s); "
        "last: exited with 1"
    ]
    clock.advance(3)
    watch.tick()
    assert health.level is FAILED  # still within the window
    clock.advance(3)
    watch.tick()
    assert health.state == "ok"
