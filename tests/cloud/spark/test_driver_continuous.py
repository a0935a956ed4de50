"""A continuous job's driver as a worker runs it (``python -m headwater.cloud.spark.driver
--continuous``, a process group of its own with its JVM): SIGKILLed once its first batch
committed, restarted over more orders: exact sums, each row read once; then the landing
grows a column and the job, run again by the driver with no restart, reads it; SIGTERM
stops it cleanly (exit 0, state stopped, no process left).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._procs import in_group
from tests._wait import wait_for

from ._orders import COLUMNS, CONTINUOUS_JOB, Orders, coupons, orders, table, totals

pytestmark = [pytest.mark.timeout(600)]


class Run:
    """One driver process, its log in a file."""

    def __init__(self, tmp: Path, job: Path, landing: Path, warehouse: Path, n: int) -> None:
        self.workdir = tmp / "work"
        self.log = tmp / f"driver-{n}.log"
        argv = [
            sys.executable,
            "-m",
            "headwater.cloud.spark.driver",
            *("--job", str(job), "--name", "shop-sums", "--continuous", "--interval", "1"),
            *("--landing", str(landing), "--warehouse", str(warehouse)),
            *("--checkpoint", str(tmp / "checkpoints"), "--workdir", str(self.workdir)),
        ]
        with open(self.log, "wb") as out:  # a file: a JVM left would hold a pipe
            self.proc = subprocess.Popen(argv, stdout=out, stderr=out, start_new_session=True)

    def status(self) -> dict[str, Any]:
        try:
            doc = json.loads((self.workdir / "status.json").read_text())
        except (OSError, ValueError):
            return {}
        return doc if doc.get("pid") == self.proc.pid else {}

    def alive(self) -> None:
        assert self.proc.poll() is None, self.log.read_text()

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        wait_for(lambda: not in_group(self.proc.pid), 30, "the driver's JVM gone")

    def end(self) -> None:
        if self.proc.poll() is None:
            self.kill()
        for p in in_group(self.proc.pid):
            p.kill()


def test_continuous_job_killed_restarted_and_grown(tmp_path: Path) -> None:
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    lander = Orders(landing)
    lander.land(orders(0, 30))
    job = tmp_path / "shop_sums.py"
    job.write_text(CONTINUOUS_JOB)

    def sums() -> Any:
        return table(warehouse, "shop_totals", ("total", "orders"))

    first = Run(tmp_path, job, landing, warehouse, 1)
    try:

        def read(run: Run, rows: int) -> bool:
            run.alive()
            doc = run.status()
            return doc.get("state") == "running" and doc["last_run"]["rows_read"] == rows

        wait_for(lambda: read(first, 30), 240, "the first 30 orders read")
        assert sums() == totals(lander.landed)
        beat = tmp_path / "work" / "c0.alive"
        touched = beat.stat().st_mtime
        wait_for(lambda: beat.stat().st_mtime > touched, 10, "the driver beating")
        first.kill()  # its batch committed: nothing of it is read again
    finally:
        first.end()

    lander.land(orders(30, 20))
    lander.land(orders(50, 10))
    second = Run(tmp_path, job, landing, warehouse, 2)
    try:
        wait_for(lambda: read(second, 30) and sums() == totals(lander.landed), 240, "60 orders")
        doc = second.status()
        assert (doc["name"], doc["mode"], doc["runs"]) == ("shop-sums", "continuous", 2)
        assert [(q["name"], q["rows"]) for q in doc["queries"]] == [("sums", 30)], doc
        assert doc["last_run"]["ok"] is None and doc["last_run"]["ended"] is None
        assert doc["last_run"]["rows_written"] >= 6  # the groups each batch updated

        # the landing grows a nullable column: the driver runs the job again, no restart
        lander.land(orders(60, 12, coupon=True), (*COLUMNS, "coupon"))

        def grown() -> bool:
            second.alive()
            counted = {q["name"]: q["rows"] for q in second.status().get("queries", [])}
            return (
                table(warehouse, "coupon_counts", ("count",)) == coupons(lander.landed)
                and sums() == totals(lander.landed)
                and counted.get("coupons") == 72  # every order, read from the start
            )

        wait_for(grown, 240, "the coupons counted")
        doc = second.status()
        assert doc["runs"] == 2 and doc["state"] == "running"
        assert "dataset 'orders' grew coupon: restarting the job's queries" in (
            second.log.read_text()
        )

        os.kill(second.proc.pid, signal.SIGTERM)  # the driver only, as its worker stops it
        assert second.proc.wait(120) == 0, second.log.read_text()
        wait_for(lambda: not in_group(second.proc.pid), 30, "the driver's JVM gone")
        doc = json.loads((tmp_path / "work" / "status.json").read_text())
        assert (doc["state"], doc["last_run"]["ok"], doc["last_run"]["error"]) == (
            "stopped",
            True,
            "",
        ), doc
        assert "Traceback" not in second.log.read_text()
    finally:
        second.end()


def test_sigterm_while_spark_starts(tmp_path: Path) -> None:
    from .test_spark_startup_stop import listening_jvm

    landing = tmp_path / "landing"
    Orders(landing).land(orders(0, 3))
    job = tmp_path / "shop_sums.py"
    job.write_text(CONTINUOUS_JOB)
    run = Run(tmp_path, job, landing, tmp_path / "warehouse", 1)
    try:
        wait_for(lambda: listening_jvm(run.proc.pid), 240, "Spark's JVM listening", interval=0.05)
        os.kill(run.proc.pid, signal.SIGTERM)  # the driver only, as its worker stops it
        assert run.proc.wait(60) == 0, run.log.read_text()
        wait_for(lambda: not in_group(run.proc.pid), 30, "no JVM left")
        doc = json.loads((tmp_path / "work" / "status.json").read_text())
        assert (doc["state"], doc["runs"], doc["last_run"]) == ("stopped", 0, None), doc
        text = run.log.read_text()
        assert text.splitlines()[-1] == "shop-sums: stopped", text
        assert "Traceback" not in text and "Exception" not in text, text
    finally:
        run.end()
