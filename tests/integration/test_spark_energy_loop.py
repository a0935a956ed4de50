"""The energy example's Spark half on a cluster, through crashes: its rollup spec and its report
job submitted as continuous jobs to a master with one worker, the landing growing while they
run, each driver SIGKILLed twice (with its JVM: a crashed host), the worker restarting them;
then every rollup window and every report row exact against an offline recomputation.

Issue 32, acceptance 2: no platform code knows the example; exactly once holds through kills
for a spec and for a user's job alike."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pyarrow.dataset as ds
import pytest

from ..cloud.spark._energy import (
    COUNT,
    DATA,
    ENERGY,
    METERS,
    SITES,
    Landing,
    expected,
    expected_rollups,
    key,
)
from ._daemons import Daemons
from ._support import wait_for

pytestmark = [pytest.mark.cluster, pytest.mark.timeout(900)]
JOBS = {"rollup": ENERGY / "rollup.toml", "report": ENERGY / "daily_report.py"}


def _job(daemons: Daemons, name: str) -> dict[str, Any]:
    jobs: dict[str, dict[str, Any]] = {j["name"]: j for j in daemons.api("/api/v1/spark/jobs")}
    return jobs[name]


def _status(workdir: Path, name: str) -> dict[str, Any]:
    try:
        doc: dict[str, Any] = json.loads((workdir / "spark" / name / "status.json").read_text())
    except (FileNotFoundError, ValueError):
        return {}
    return doc


def _crash(pid: int) -> None:
    """SIGKILL the driver and everything it started (its JVM, Spark's Python workers) at once."""
    proc = psutil.Process(pid)
    group = [proc, *proc.children(recursive=True)]
    for p in group:
        with contextlib.suppress(psutil.NoSuchProcess):
            p.send_signal(signal.SIGKILL)
    psutil.wait_procs(group, timeout=15)


def _table(warehouse: Path, name: str) -> list[dict[str, Any]]:
    if not (warehouse / name).exists():
        return []
    rows: list[dict[str, Any]] = (
        ds.dataset(warehouse / name, format="parquet", partitioning="hive").to_table().to_pylist()
    )
    return rows


def _ms(value: dt.datetime) -> int:
    value = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    return round(value.timestamp() * 1000)


def _rollups_exact(warehouse: Path) -> bool:
    """Whether every table of the spec holds exactly the windows recomputed offline (the
    approximate quantile within its window's range)."""
    for table, windows in expected_rollups(COUNT).items():
        cols = ("site", "meter_id") if table.endswith("_meter") else ("site",)
        got = {(*(r[c] for c in cols), _ms(r["window_start"])): r for r in _table(warehouse, table)}
        if set(got) != set(windows):
            return False
        for k, w in windows.items():
            r = got[k]
            exact = {m: r[m] for m in ("readings", "v_min", "v_max", "low")}
            if exact != {m: w[m] for m in exact} or round(float(r["kwh"]), 9) != w["kwh"]:
                return False
            assert math.isclose(r["kwh_mean"], w["kwh"] / w["readings"], rel_tol=1e-9)
            if w["readings"] > 1:
                assert math.isclose(r["v_std"], statistics.stdev(w["volts"]), rel_tol=1e-9)
            assert w["v_min"] <= r["v_p05"] <= w["v_max"]
    return True


def test_a_spec_and_a_job_submitted_survive_two_driver_kills_each_exactly(
    daemons: Daemons, tmp_path: Path
) -> None:
    messages = list(DATA.messages(SITES, METERS, COUNT))
    quarter = len(messages) // 4
    parts = [messages[i * quarter : (i + 1) * quarter] for i in range(3)]
    parts.append(messages[3 * quarter :])  # in publishing order: event time only grows
    landing = Landing(tmp_path / "out")
    landing.land(parts[0])
    warehouse = tmp_path / "warehouse"
    workdir = tmp_path / "w1"
    daemons.start_master()
    daemons.start_worker("w1", more=("--landing", str(landing.root), "--warehouse", str(warehouse)))
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "the worker to attach")
    env = {**os.environ, "HEADWATER_TOKEN": daemons.token}
    for name, file in JOBS.items():
        done = subprocess.run(
            [sys.executable, "-m", "headwater", "spark", "submit", str(file), "--name", name,
             "--continuous", "--master", daemons.http],
            capture_output=True, text=True, timeout=120, check=False, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr

    def running(name: str, after_pid: int = 0) -> int:
        """The pid of ``name``'s driver once it runs (a new one after ``after_pid``) and has
        read rows since it started, else 0."""
        s = _status(workdir, name)
        pid = int(s.get("pid") or 0)
        read = int((s.get("last_run") or {}).get("rows_read") or 0)
        ok = s.get("state") == "running" and pid != after_pid and read > 0
        return pid if ok and psutil.pid_exists(pid) else 0

    def restarted(name: str, old: int = 0) -> Any:
        return lambda: running(name, old)

    pids = {n: int(wait_for(restarted(n), 400, f"{n} reading")) for n in JOBS}
    for kill, part in enumerate(parts[1:3], start=1):
        for name in JOBS:
            _crash(pids[name])
        # lands while the drivers are down: a restarted driver must read it (landed before
        # the kills, a driver could read it all before its kill, and its successor none)
        landing.land(part)
        for name in JOBS:
            pids[name] = int(wait_for(restarted(name, pids[name]), 400, f"{name} again ({kill})"))
    landing.land(parts[3])
    wait_for(lambda: _rollups_exact(warehouse), 400, "every rollup window exact")
    want = expected(COUNT)
    wait_for(
        lambda: sorted(_table(warehouse, "daily_meter_report"), key=key) == want,
        400,
        "the report exact",
    )
    for name in JOBS:
        job = _job(daemons, name)
        assert job["state"] == "running" and job["restarts"] >= 2, job
        assert job["last_error"] == "" or "exited" in job["last_error"], job
    assert _status(workdir, "rollup")["mode"] == "continuous"
