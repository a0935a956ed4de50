"""Ctrl-C while `headwater run` starts: the run says it stopped during its start-up, in one
line, exits 0 as a Ctrl-C after its start-up does, and leaves no process and no error in any
log behind (a terminal's Ctrl-C is SIGINT to the whole process group, children included)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from .._procs import in_group
from ._support import EXAMPLES, wait_for

WORDCOUNT = EXAMPLES / "iot" / "wordcount.py"
pytestmark = pytest.mark.cluster


def test_ctrl_c_while_the_topology_master_starts(tmp_path: Path) -> None:
    workdir = tmp_path / "run"
    proc = subprocess.Popen(
        [sys.executable, "-m", "headwater", "run", str(WORDCOUNT), "--workdir", str(workdir)],
        env={**os.environ, "WORDCOUNT_RATE": "0", "WORDCOUNT_OUTPUT": str(tmp_path / "out")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a group of its own, as a terminal's foreground job
    )
    try:

        def tmaster_started() -> bool:
            try:
                kids = psutil.Process(proc.pid).children()
                return any("headwater.cloud.tmaster" in k.cmdline() for k in kids)
            except psutil.Error:
                return False

        wait_for(tmaster_started, 60, "the run starting its topology master", interval=0.01)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert (proc.returncode, err) == (0, ""), out + err
    assert out == f"stopping...\nstopped during start-up\nlogs kept in {workdir}\n"
    _, alive = psutil.wait_procs(in_group(proc.pid), timeout=10)
    assert not alive, f"left behind: {[p.cmdline() for p in alive]}"
    for log in workdir.glob("*.log"):
        text = log.read_text(errors="replace")
        assert "cannot join thread" not in text, log.name
        assert "Traceback" not in text, f"{log.name}: {text}"
