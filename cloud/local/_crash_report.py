"""What a local run says when something in it crash-loops: what, why, and where the logs are.

``crash_loop_error`` looks at the loops the launcher counted itself (its topology master
and containers, restarted here) and then at those its topology master reports (components,
with their traceback), and words the first one as a ``CrashLoopError``. It takes only the
run's name, its work directory, the launcher's ``CrashLoopDetector`` and a callable that
fetches the master's summary; ``LocalCluster.check`` (``_cluster.py``) raises what it gives.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater.common._exceptions import CrashLoopError
from headwater.common.control import CrashLoopDetector


def crash_loop_error(
    topology: str,
    workdir: Path,
    crash_loops: CrashLoopDetector,
    summary: Callable[[], dict[str, Any]],
) -> CrashLoopError | None:
    """The error for the run's first crash loop, or None while nothing crash-loops."""
    for key, loop in crash_loops.loops().items():
        log_file = (
            "tmaster.log" if key == "the topology master" else f"container-{key.split()[-1]}.log"
        )
        return _error(
            topology,
            workdir,
            f"{loop.describe()} (last: {loop.reason})",
            _tail(workdir / log_file),
        )
    try:
        loops = summary()["status"]["crash_loops"]
    except (OSError, KeyError, ValueError):
        return None  # the master is away (restarting): its own crash loop is counted above
    for loop in loops:
        what = (
            f"{loop['key']} is crash-looping: {loop['failures']} failures in "
            f"{loop['over_s']:.0f}s (last: {loop['reason']})"
        )
        lines = [
            line for line in loop["traceback"].rstrip().splitlines() if line.strip(" ^~")
        ]  # not the markers under the failing expression
        if not lines and loop["task"] is not None:
            lines = _tail(workdir / f"task-{loop['task']}.log")
        cause = [loop["exception"]] if loop["exception"] else []
        return _error(
            topology,
            workdir,
            what,
            [
                *cause,
                *(["last lines of its traceback:"] if loop["traceback"] else []),
                *lines[-8:],
            ],
        )
    return None


def _error(topology: str, workdir: Path, what: str, lines: list[str]) -> CrashLoopError:
    detail = "".join(f"\n  {line}" for line in lines)
    return CrashLoopError(f"{topology}: {what}{detail}\n  logs: {workdir}")


def _tail(path: Path, n: int = 10) -> list[str]:
    try:
        return path.read_text(errors="replace").rstrip().splitlines()[-n:]
    except OSError:
        return []
