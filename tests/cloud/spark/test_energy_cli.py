"""The energy example's Spark side from the command line, as its README runs it: the rollup
spec (``headwater spark rollup --spec``) and the report job (``headwater spark run``).
Each checks exact rows against an offline recomputation."""

from __future__ import annotations

import datetime as dt
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyarrow.dataset as ds
import pytest

from tests.cloud.test_rest_auth import master  # noqa: F401  (the fixture)

from ._energy import COUNT, DATA, ENERGY, METERS, SITES, Landing, expected, expected_rollups, key

pytestmark = pytest.mark.timeout(600)


def headwater(*args: str, timeout: int = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def landed(tmp_path: Path) -> Path:
    landing = Landing(tmp_path / "out")
    landing.land(list(DATA.messages(SITES, METERS, COUNT)))
    return landing.root


def table_rows(warehouse: Path, table: str) -> list[dict[str, Any]]:
    data = ds.dataset(warehouse / table, format="parquet", partitioning="hive")
    rows: list[dict[str, Any]] = data.to_table().to_pylist()
    return rows


def _ms(value: Any) -> int:
    """A window bound as epoch ms, whether Spark wrote a TIMESTAMP or epoch ms."""
    if isinstance(value, dt.datetime):
        value = value if value.tzinfo else value.replace(tzinfo=dt.UTC)
        return int(value.timestamp() * 1000)
    return int(value)


def test_the_rollup_spec_rolls_up_the_meters_exactly(tmp_path: Path) -> None:
    root, warehouse = landed(tmp_path), tmp_path / "warehouse"
    spec = str(ENERGY / "rollup.toml")
    done = headwater(
        "spark",
        "rollup",
        "--spec",
        spec,
        "--landing",
        str(root),
        "--warehouse",
        str(warehouse),
        "--once",
    )
    assert done.returncode == 0, done.stderr[-3000:]
    want = expected_rollups(COUNT)
    for table, windows in want.items():
        cols = ("site", "meter_id") if table.endswith("_meter") else ("site",)
        got = {
            (*(r[c] for c in cols), _ms(r["window_start"])): r for r in table_rows(warehouse, table)
        }
        assert set(got) == set(windows), table
        for k, w in windows.items():
            r = got[k]
            span = 3_600_000 if table.startswith("hourly") else 86_400_000
            assert _ms(r["window_end"]) == k[-1] + span
            assert r["date"] == dt.datetime.fromtimestamp(k[-1] / 1000, dt.UTC).strftime("%Y-%m-%d")
            exact = {m: r[m] for m in ("readings", "v_min", "v_max", "low")}
            assert exact == {m: w[m] for m in exact}, (table, k)
            assert round(float(r["kwh"]), 9) == w["kwh"], (table, k)
            assert math.isclose(float(r["kwh_mean"]), w["kwh"] / w["readings"], rel_tol=1e-9)
            if w["readings"] > 1:
                assert math.isclose(r["v_std"], statistics.stdev(w["volts"]), rel_tol=1e-9)
            assert w["v_min"] <= r["v_p05"] <= w["v_max"]


def test_the_report_job_runs_from_the_command_line_exactly(tmp_path: Path) -> None:
    root, warehouse = landed(tmp_path), tmp_path / "warehouse"
    job = str(ENERGY / "daily_report.py")
    for _ in range(2):  # a second run finds nothing new and leaves the table as it was
        done = headwater("spark", "run", job, "--landing", str(root), "--warehouse", str(warehouse))
        assert done.returncode == 0, done.stderr[-3000:]
        got = sorted(table_rows(warehouse, "daily_meter_report"), key=key)
        assert got == expected(COUNT)


def test_the_readme_trains_writes_and_registers_the_energy_model(
    tmp_path: Path,
    master: dict[str, Any],  # noqa: F811
) -> None:
    """The README's ``energy_model.py`` commands, as written (the landing, warehouse and
    master substituted): the first writes the ONNX file and its metadata, the second
    (``--master``, the admin token in ``HEADWATER_TOKEN``) registers it."""
    readme = (ENERGY / "README.md").read_text()
    lines = [
        x
        for x in readme.splitlines()
        if x.startswith("headwater spark run examples/energy/energy_model.py")
    ]
    assert len(lines) == 2 and "--master $HEADWATER_MASTER" in lines[1]
    root = landed(tmp_path)
    admin = (master["state"] / "admin.token").read_text().strip()
    # the README's shell: both exported; only --master hands the job the token
    env = {**os.environ, "HEADWATER_TOKEN": admin, "HEADWATER_MASTER": master["http"]}
    for line in lines:
        words = [
            {
                "energy-out/landing": str(root),
                "energy-wh": str(tmp_path / "wh"),
                "$HEADWATER_MASTER": master["http"],
            }.get(w, w)
            for w in line.split()[1:]
        ]
        words[2] = str(ENERGY / "energy_model.py")
        done = subprocess.run(
            [sys.executable, "-m", "headwater", *words],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
            env=env,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert ("registered" in done.stdout) == ("--master" in words), done.stdout
    onnx = tmp_path / "wh" / "_models" / "energy-next-kwh.onnx"
    assert onnx.stat().st_size > 0 and onnx.with_name(onnx.name + ".meta.json").is_file()
    assert "registered energy-next-kwh version 1 (" in done.stdout
    shown = headwater(
        "models", "show", "energy-next-kwh", "--master", master["http"], "--token", admin
    )
    assert shown.returncode == 0, shown
    assert "onnx/1" in shown.stdout and '"dataset": "meters"' in shown.stdout
