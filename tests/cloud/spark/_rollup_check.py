"""Checks shared by the rollup's tests: the rollup as a process, the warehouse against the raw
readings recomputed offline, and the run that kills its driver twice."""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any, Protocol

import psutil
import pytest

from headwater.cloud.spark._warehouse import DATA_FILE, read_table
from tests._wait import wait_for

REPO = Path(__file__).resolve().parents[3]
IOT_SPEC = REPO / "examples" / "iot" / "rollup.toml"
GRAIN_MS = {"hourly": 3_600_000, "daily": 86_400_000}
CENTS = Decimal("1e-12")  # the rollup sums values rounded to 12 places, exactly
# The killed runs' watermark: longer than the event time landed at once (three parts of the
# caller's input, 10 hours of it in the agents' case), so no row is ever late and every one
# must be counted. At 1 hour, a site whose agent lagged the other's by more than an hour of
# event time (two agents under load) had rows dropped as late: 32 of them, by design.
WATERMARK = "1 day"


def expected(rows: list[dict[str, Any]], grain: str, per: str) -> dict[tuple[Any, ...], Any]:
    """The offline recomputation: key (site[, sensor], window start ms) -> the aggregates."""
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    size = GRAIN_MS[grain]
    for r in rows:
        start = r["ts"] // size * size
        key = (r["site"], r["sensor"], start) if per == "sensor" else (r["site"], start)
        groups.setdefault(key, []).append(r)
    out = {}
    for key, rs in groups.items():
        values = [r["value"] for r in rs]
        out[key] = {
            "count": len(rs),
            "sum": float(sum(Decimal(repr(v)).quantize(CENTS) for v in values)),
            "min": min(values),
            "max": max(values),
            "stddev": statistics.stdev(values) if len(values) > 1 else None,
            "anomalies": sum(1 for r in rs if r["anomaly"]),
            "values": set(values),
        }
    return out


def assert_warehouse(warehouse: Path, rows: list[dict[str, Any]]) -> None:
    """Every hourly and daily aggregate, per site and per sensor, against the raw readings."""
    for grain, size in GRAIN_MS.items():
        for per in ("sensor", "site"):
            name = f"{grain}_{per}"
            want = expected(rows, grain, per)
            got = read_table(warehouse / name).to_pylist()
            keys = [
                (g["site"], g["sensor"], _ms(g["window_start"]))
                if per == "sensor"
                else (g["site"], _ms(g["window_start"]))
                for g in got
            ]
            assert len(keys) == len(set(keys)), f"{name}: a window twice"
            assert set(keys) == set(want), f"{name}: windows differ"
            for key, g in zip(keys, got, strict=True):
                w = want[key]
                for col in ("count", "sum", "min", "max", "anomalies"):
                    assert g[col] == w[col], (name, key, col, g[col], w[col])
                assert g["anomaly_rate"] == w["anomalies"] / w["count"]
                assert _ms(g["window_end"]) - _ms(g["window_start"]) == size
                assert g["date"] == g["window_start"].strftime("%Y-%m-%d")
                if w["stddev"] is None:
                    assert g["stddev"] is None
                else:
                    assert g["stddev"] == pytest.approx(w["stddev"], rel=1e-9, abs=0)
                assert g["p95"] in w["values"]  # approximate, but one of the window's values
            for part in (warehouse / name).glob("date=*"):  # (beside its _lock)
                assert sorted(p.name for p in part.iterdir()) == [DATA_FILE], part


def _ms(t: Any) -> int:
    ms: float = t.timestamp() * 1000
    return round(ms)


class Rollup:
    """``python -m headwater spark rollup`` as its own process group (driver + its JVM)."""

    def __init__(self, landing: Path, warehouse: Path, log: Path, *extra: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.log = log
        with log.open("ab") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "headwater",
                    "spark",
                    "rollup",
                    "--landing",
                    str(landing),
                    "--warehouse",
                    str(warehouse),
                    "--spec",
                    str(IOT_SPEC),
                    *extra,
                ],
                cwd=REPO,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )

    def kill(self) -> None:
        """SIGKILL the driver and its JVM at once (a crashed host), and reap them."""
        group = [psutil.Process(self.proc.pid), *psutil.Process(self.proc.pid).children(True)]
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(10)
        psutil.wait_procs(group, timeout=10)

    def output(self) -> str:
        return self.log.read_text(errors="replace")


def _batch(checkpoint: Path, what: str) -> Callable[[], set[int]]:
    def ids() -> set[int]:
        folder = checkpoint / what
        if not folder.is_dir():
            return set()
        return {int(p.name) for p in folder.iterdir() if p.name.isdigit()}

    return ids


class Landing(Protocol):
    """A landing zone being filled: ``land(n)`` lands the next ``n`` parts of the input and
    returns once they are committed; ``landed`` is what has landed (offline, as dicts)."""

    root: Path
    pending: list[Any]
    landed: list[dict[str, Any]]

    def land(self, commits: int = 1) -> None: ...


def killed_twice(landing: Landing, tmp_path: Path, source: str = "files") -> str:
    """Rollups killed (SIGKILL) twice mid-run while more lands, then a last ``--once`` pass;
    returns its output. The caller checks the warehouse."""
    warehouse = tmp_path / "warehouse"
    hourly = warehouse / "_checkpoints" / "hourly"
    offsets, commits = _batch(hourly, "offsets"), _batch(hourly, "commits")
    log = tmp_path / "rollup.log"
    args: tuple[str, ...] = ("--continuous", "--interval", "1", "--max-files", "4")
    args += ("--watermark", WATERMARK)
    args += ("--source", source)
    landing.land(3)

    # 1: killed once its first micro-batch has committed
    run = Rollup(landing.root, warehouse, log, *args)
    try:
        wait_for(lambda: 0 in commits(), 120, "the first hourly batch to commit")
        landing.land(3)
        run.kill()
        # 2: killed in the middle of a micro-batch: its offsets written, its commit not yet
        run = Rollup(landing.root, warehouse, log, *args)
        first = max(commits())
        wait_for(lambda: max(commits()) > first, 120, "a batch committed after the restart")
        landing.land(3)
        wait_for(
            lambda: max(offsets()) > max(commits()) > first or None,
            120,
            "a batch in flight",
            interval=0.02,
        )
        run.kill()
    finally:
        if run.proc.poll() is None:
            run.kill()
    landing.land(3)

    # 3: one pass over what is left
    run = Rollup(
        landing.root, warehouse, log, "--once", "--watermark", WATERMARK, "--source", source
    )
    try:
        assert run.proc.wait(120) == 0, run.output()
    finally:
        if run.proc.poll() is None:
            run.kill()
    assert not landing.pending
    out = run.output()
    assert "late rows dropped" in out and "Traceback" not in out, out
    return out
