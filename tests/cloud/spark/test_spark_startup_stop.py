"""Ctrl-C while `headwater spark rollup` starts Spark: one line, exit 130 (as a Ctrl-C once it
runs), no Py4J traceback, no "could not start Spark", and no JVM left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil

from tests._procs import in_group
from tests._wait import wait_for

from ._landing import Lander, demo_readings
from ._rollup_check import IOT_SPEC


def listening_jvm(pid: int) -> bool:
    """Whether Spark's JVM, under ``pid``, listens: its Py4J gateway is up, and the
    rollup is making its Spark context through it."""
    try:
        for p in psutil.Process(pid).children(recursive=True):
            if "org.apache.spark.deploy.SparkSubmit" in p.cmdline() and any(
                c.status == psutil.CONN_LISTEN for c in p.net_connections("tcp")
            ):
                return True
    except psutil.Error:
        pass
    return False


def test_ctrl_c_while_spark_starts(tmp_path: Path) -> None:
    Lander(tmp_path / "landing").land(demo_readings(1, 1, 3, 1000))
    out, err = tmp_path / "out.txt", tmp_path / "err.txt"
    folders = ["--landing", str(tmp_path / "landing"), "--warehouse", str(tmp_path / "w")]
    folders += ["--spec", str(IOT_SPEC)]
    with open(out, "wb") as o, open(err, "wb") as e:  # files: a JVM left would hold a pipe
        proc = subprocess.Popen(
            [sys.executable, "-m", "headwater", "spark", "rollup", "--once", *folders],
            stdout=o,
            stderr=e,
            start_new_session=True,  # a group of its own, as a terminal's foreground job
        )
    try:
        wait_for(lambda: listening_jvm(proc.pid), 240, "Spark's JVM listening", interval=0.05)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal sends on Ctrl-C
        code = proc.wait(60)
    finally:
        left = in_group(proc.pid)
        for p in left:
            p.kill()
        proc.wait()
    text = err.read_text(errors="replace")
    assert code == 130, text
    assert text.splitlines()[-1] == "headwater: stopped during Spark's start-up", text
    assert "Traceback" not in text and "Exception" not in text, text
    assert "could not start Spark" not in text, text
    assert out.read_text() == ""
    assert not left, f"left behind: {[p.pid for p in left]}"
