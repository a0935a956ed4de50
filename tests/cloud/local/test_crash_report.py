"""headwater.cloud.local._crash_report: how a local run words a crash loop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from headwater.cloud.local._crash_report import crash_loop_error
from headwater.common._clock import ManualClock
from headwater.common.control import CrashLoopDetector, CrashLoopPolicy


def _detector() -> tuple[CrashLoopDetector, ManualClock]:
    clock = ManualClock()
    return CrashLoopDetector(CrashLoopPolicy(failures=2, window_s=60.0), clock), clock


def _away() -> dict[str, Any]:
    raise OSError("connection refused")


def test_nothing_crash_looping_gives_none(tmp_path: Path) -> None:
    loops, _ = _detector()
    assert crash_loop_error("t", tmp_path, loops, lambda: {"status": {"crash_loops": []}}) is None
    assert crash_loop_error("t", tmp_path, loops, _away) is None


def test_a_container_the_launcher_restarted_names_its_log_tail(tmp_path: Path) -> None:
    loops, clock = _detector()
    (tmp_path / "container-1.log").write_text("".join(f"line {i}\n" for i in range(12)))
    loops.failed("container 1", "exited with 1")
    clock.advance(2.0)
    loops.failed("container 1", "exited with 2")
    error = crash_loop_error("wc", tmp_path, loops, _away)
    assert error is not None
    tail = "".join(f"\n  line {i}" for i in range(2, 12))
    assert str(error) == (
        f"wc: container 1 is crash-looping: 2 failures in 2s (last: exited with 2){tail}"
        f"\n  logs: {tmp_path}"
    )


def test_a_component_the_master_reports_gives_its_traceback(tmp_path: Path) -> None:
    loops, _ = _detector()
    loop = {
        "key": "component split",
        "failures": 5,
        "over_s": 3.2,
        "reason": "exited with 1",
        "traceback": "Traceback:\n  x = 1 / 0\n      ^^^^^\nZeroDivisionError\n",
        "task": 3,
        "exception": "ZeroDivisionError: division by zero",
    }
    error = crash_loop_error("wc", tmp_path, loops, lambda: {"status": {"crash_loops": [loop]}})
    assert error is not None
    assert str(error) == (
        "wc: component split is crash-looping: 5 failures in 3s (last: exited with 1)"
        "\n  ZeroDivisionError: division by zero"
        "\n  last lines of its traceback:"
        "\n  Traceback:\n    x = 1 / 0\n  ZeroDivisionError"
        f"\n  logs: {tmp_path}"
    )


def test_without_a_traceback_the_task_log_tail_stands_in(tmp_path: Path) -> None:
    loops, _ = _detector()
    (tmp_path / "task-3.log").write_text("starting\nkilled\n")
    loop = {
        "key": "component split",
        "failures": 5,
        "over_s": 3.0,
        "reason": "killed",
        "traceback": "",
        "task": 3,
        "exception": "",
    }
    error = crash_loop_error("wc", tmp_path, loops, lambda: {"status": {"crash_loops": [loop]}})
    assert error is not None
    assert str(error) == (
        "wc: component split is crash-looping: 5 failures in 3s (last: killed)"
        f"\n  starting\n  killed\n  logs: {tmp_path}"
    )
