"""Finding 7 (second half): `headwater run` of a component that cannot start fails loudly.

Before: the container (or the rollback) restarted it again and again, and the run
exited 0 at its --duration. Now a crash loop (5 failures of one task within 60 s)
makes the run print the component, the exception and the last lines of its
traceback, stop every process it started, and exit 1, in every reliability mode.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from ._report import record

BROKEN = Path(__file__).parent / "topologies" / "broken.py"
pytestmark = pytest.mark.cluster

CASES = [
    (
        "ATMOST_ONCE",
        "init",
        "RuntimeError: the model file is missing",
        'raise RuntimeError("the model file is missing")',
    ),
    (
        "ATLEAST_ONCE",
        "init",
        "RuntimeError: the model file is missing",
        'raise RuntimeError("the model file is missing")',
    ),
    (
        "EFFECTIVELY_ONCE",
        "init",
        "RuntimeError: the model file is missing",
        'raise RuntimeError("the model file is missing")',
    ),
    (
        "ATLEAST_ONCE",
        "open",
        "ConnectionError: the database refused the connection",
        'raise ConnectionError("the database refused the connection")',
    ),
    (
        "EFFECTIVELY_ONCE",
        "open",
        "ConnectionError: the database refused the connection",
        'raise ConnectionError("the database refused the connection")',
    ),
]


@pytest.mark.parametrize(("mode", "where", "exception", "line"), CASES)
def test_a_component_that_cannot_start_ends_the_run_with_its_cause(
    tmp_path: Path, mode: str, where: str, exception: str, line: str
) -> None:
    env = {**os.environ, "HW_TEST_MODE": mode, "HW_TEST_BREAK": where}
    began = time.monotonic()
    # --duration bounds the run the old way: it ended there with 0, after restarting forever
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "headwater",
            "run",
            str(BROKEN),
            "--containers",
            "2",
            "--duration",
            "60",
            "--quiet",
            "--workdir",
            str(tmp_path / "run"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: set[psutil.Process] = set()  # every process the run started, as they come and go
    try:
        while time.monotonic() - began < 90:  # until the run exits, sampling its tree
            with contextlib.suppress(psutil.NoSuchProcess):
                seen.update(psutil.Process(proc.pid).children(recursive=True))
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
                break
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    took = time.monotonic() - began
    _, alive = psutil.wait_procs(list(seen), timeout=5)
    record(
        f"run: a bolt raising in {'its constructor' if where == 'init' else 'open'} "
        f"({mode.lower()})",
        detect_s=round(took, 1),
        recover_s=None,
        readings=0,
        lost=0,
        duplicated=0,
    )
    assert proc.returncode == 1, (proc.returncode, out, err)
    assert "component 'model' (task 2) is crash-looping" in err, err
    assert exception in err, err
    assert line in err, err  # the traceback's last lines
    assert f"logs: {tmp_path / 'run'}" in err
    assert "stopped" in out
    assert not alive, f"left behind: {[p.pid for p in alive]}"
    assert len(seen) >= 3  # the master, two containers (and instances) did run


def test_wait_running_raises_the_crash_loop_instead_of_timing_out(tmp_path: Path) -> None:
    from headwater.cloud.local import LocalCluster
    from headwater.common._exceptions import CrashLoopError

    cluster = LocalCluster(
        BROKEN, containers=1, workdir=tmp_path / "run", env={"HW_TEST_MODE": "ATLEAST_ONCE"}
    )
    cluster.start()
    try:
        # a timeout would raise ClusterError: CrashLoopError says it stopped on the loop
        with pytest.raises(CrashLoopError, match="component 'model' \\(task 2\\) is crash-looping"):
            cluster.wait_running(timeout=120)
    finally:
        cluster.stop()
