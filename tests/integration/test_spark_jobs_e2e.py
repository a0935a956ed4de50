"""A real PySpark job submitted through the CLI to a master with one worker, run by the real
driver (``python -m headwater.cloud.spark.driver``) to ``succeeded``: the energy example's
report job over a landing its own topology wrote, its warehouse table exact against an
offline recomputation, its driver log readable through ``headwater logs NAME``; then a job
that raises, shown failed with its error line while its worker restarts its driver."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from ..cloud.spark._energy import COUNT, DATA, ENERGY, METERS, SITES, Landing, expected, key
from ._daemons import Daemons
from ._support import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(600)]


def test_a_submitted_pyspark_job_runs_to_success_on_a_worker(
    daemons: Daemons, tmp_path: Path
) -> None:
    landing = Landing(tmp_path / "out")
    landing.land(list(DATA.messages(SITES, METERS, COUNT)))
    warehouse = tmp_path / "warehouse"
    daemons.start_master()
    daemons.start_worker("w1", more=("--landing", str(landing.root), "--warehouse", str(warehouse)))
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "the worker to attach")

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "headwater", *args, "--master", daemons.http],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, "HEADWATER_TOKEN": daemons.token},
        )

    done = cli("spark", "submit", str(ENERGY / "daily_report.py"), "--name", "report")
    assert (done.returncode, done.stdout) == (
        0,
        "submitted Spark job 'report' (once, on worker w1)\n",
    ), done.stderr
    job = wait_for(
        lambda: (
            (j := {x["name"]: x for x in daemons.api("/api/v1/spark/jobs")}["report"])["state"]
            in ("succeeded", "failed")
            and j
        ),
        400,
        "the job to end",
    )
    assert (job["state"], job["last_error"], job["restarts"]) == ("succeeded", "", 0), job
    want = expected(COUNT)
    rows = ds.dataset(warehouse / "daily_meter_report", format="parquet", partitioning="hive")
    assert sorted(rows.to_table().to_pylist(), key=key) == want
    assert job["runs"] == 1 and job["rows_read"] > 0 and job["rows_written"] > 0, job
    logs = cli("logs", "report", "--tail", "10000")
    assert logs.returncode == 0, logs.stderr
    header = logs.stdout.splitlines()[0]
    path = tmp_path / "w1" / "spark" / "report" / "driver.log"
    assert header == f"==> Spark job report: driver log on node w1 ({path}) <=="
    assert logs.stdout.split("\n", 1)[1] == path.read_text(errors="replace")
    # a job that raises: failed with its error line, its driver restarted, the cluster serving
    raising = tmp_path / "raising.py"
    raising.write_text("def run(spark, ctx):\n    raise ValueError('no meters for ' + ctx.name)\n")
    done = cli("spark", "submit", str(raising), "--every", "1h")
    assert done.returncode == 0, done.stderr

    def failing() -> dict[str, Any] | None:
        j = {x["name"]: x for x in daemons.api("/api/v1/spark/jobs")}["raising"]
        shown = j["state"] == "failed" and "ValueError: no meters for raising" in j["last_error"]
        return j if shown and j["restarts"] >= 1 else None

    failed = wait_for(failing, 300, "the failing job shown failed, its driver restarted")
    assert (failed["node"], failed["mode"], failed["every_s"]) == ("w1", "every", 3600.0)
    table = cli("spark", "jobs").stdout
    assert "    error: " in table and "ValueError: no meters for raising" in table, table
    # a spec naming a column the dataset lacks, and one naming a dataset the landing lacks:
    # each job failed with one line saying what there is; the cluster serves on
    spec = (ENERGY / "rollup.toml").read_text()
    for name, text, says in (
        ("nocolumn", spec.replace("sum(kwh)", "sum(watts)"),
         "dataset 'meters' has no column 'watts' (measure 'kwh'); its columns: meter_id"),
        ("nodataset", spec.replace('dataset = "meters"', 'dataset = "meter"'),
         "no dataset 'meter' in"),
    ):  # fmt: skip
        (tmp_path / f"{name}.toml").write_text(text)
        done = cli("spark", "submit", str(tmp_path / f"{name}.toml"))
        assert done.returncode == 0, done.stderr

        def shown(name: str = name, says: str = says) -> dict[str, Any] | None:
            j = {x["name"]: x for x in daemons.api("/api/v1/spark/jobs")}[name]
            return j if j["state"] == "failed" and says in j["last_error"] else None

        job = wait_for(shown, 300, f"{name} shown failed with what is wrong")
        assert "\n" not in job["last_error"] and "Traceback" not in job["last_error"], job
    assert "grid_events" in job["last_error"] and "meters" in job["last_error"], job
    assert cli("spark", "jobs").returncode == 0
