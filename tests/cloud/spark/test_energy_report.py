"""The energy example's Spark job (``examples/energy/daily_report.py``) with real PySpark, over
a landing its own topology wrote (``LocalRun``: the example's bolts and landing sinks, the
publisher's messages in place of the agent's log): each day's report is exact against an
offline recomputation, after the landing grows and after any re-run."""

from __future__ import annotations

import dataclasses
import importlib.util
import os
import sys
from collections import defaultdict
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from headwater.common.plan import load_topology
from headwater.spark import JobContext, session
from headwater.testing import LocalRun, TestSource

pytestmark = [
    pytest.mark.timeout(600),
    # py4j leaves a socket of its gateway to the garbage collector
    pytest.mark.filterwarnings(
        "ignore:Exception ignored in. <socket.socket:pytest.PytestUnraisableExceptionWarning"
    ),
]
ENERGY = Path(__file__).resolve().parents[3] / "examples" / "energy"
SITES, METERS, COUNT, FIRST = 2, 3, 40, 24  # FIRST rounds land before the job's first run
ARRIVED_MS = 1_767_744_000_000  # 2026-01-07: when the agent took them in, after every ts


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ENERGY / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sys.path.insert(0, str(ENERGY))
DATA = _module("energy_data")
JOB = _module("daily_report")
sys.path.remove(str(ENERGY))


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    s = session("headwater-test-energy", "local[2]")
    yield s
    s.stop()
    # and the JVM with it (it outlives stop()); it exits when its stdin closes
    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is not None:
        gateway.shutdown()
        gateway.proc.stdin.close()
        gateway.proc.wait(30)
        SparkContext._gateway = SparkContext._jvm = None


class Landing:
    """The energy topology in this process, its meter log replaced by a list that grows."""

    def __init__(self, out: Path) -> None:
        before = os.environ.get("ENERGY_OUT")
        os.environ["ENERGY_OUT"] = str(out)
        try:
            topology = load_topology(ENERGY / "energy_pipeline.py")
        finally:
            if before is None:
                del os.environ["ENERGY_OUT"]
            else:
                os.environ["ENERGY_OUT"] = before
        spout = topology.component("meter_log")
        self.items: list[tuple[str, bytes, int]] = []
        source = dataclasses.replace(spout, factory=partial(TestSource, self.items))
        topology = dataclasses.replace(
            topology, components=tuple(source if c is spout else c for c in topology.components)
        )
        self.run = LocalRun(topology)
        self.root = out / "landing"

    def land(self, messages: list[tuple[str, bytes]]) -> None:
        """Runs ``messages`` through the topology and commits them (one checkpoint)."""
        source = self.run.instances("meter_log")[0]
        assert isinstance(source, TestSource)
        start = len(source.items)
        source.items.extend((t, p, ARRIVED_MS) for t, p in messages)
        if hasattr(source, "todo"):  # opened: queue the new ones, in order
            source.todo[:0] = reversed(range(start, len(source.items)))
        for task in self.run.tasks.values():
            task.idle = 0
        self.run.run()
        self.run.checkpoint()


def expected(count: int) -> list[dict[str, Any]]:
    """The report's rows, recomputed from the readings and events the example must land."""
    days: dict[tuple[str, str, str], dict[str, Any]] = {}
    for r in DATA.meters_rows(SITES, METERS, count):
        d = days.setdefault(
            (r["site"], r["meter_id"], r["date"]),
            {"readings": 0, "kwh": 0.0, "v": [], "low_readings": 0, "ts": []},
        )
        d["readings"] += 1
        d["kwh"] += r["kwh"]
        d["v"].append(r["voltage"])
        d["low_readings"] += int(r["low_voltage"])
        d["ts"].append(r["ts"])
    events: dict[tuple[str, str, str], dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for e in DATA.grid_event_rows(SITES, METERS, count):
        events[(e["site"], e["meter_id"], e["date"])][e["kind"]] += 1
    return sorted(
        (
            {
                "site": site,
                "meter_id": meter,
                "readings": d["readings"],
                "kwh": round(d["kwh"], 6),
                "v_min": min(d["v"]),
                "v_max": max(d["v"]),
                "low_readings": d["low_readings"],
                "sags": events[(site, meter, date)]["sag"],
                "recoveries": events[(site, meter, date)]["recover"],
                "first_ts": min(d["ts"]),
                "last_ts": max(d["ts"]),
                "date": date,
            }
            for (site, meter, date), d in days.items()
        ),
        key=_key,
    )


def _key(r: dict[str, Any]) -> tuple[Any, ...]:
    return (r["date"], r["site"], r["meter_id"])


def run_job(spark: Any, landing: Path, warehouse: Path, checkpoint: Path) -> JobContext:
    ctx = JobContext(
        spark, name="daily_report", landing=landing, warehouse=warehouse, checkpoint=checkpoint
    )
    JOB.run(spark, ctx)
    return ctx


def table(ctx: JobContext) -> list[dict[str, Any]]:
    return sorted(ctx.warehouse.read(JOB.TABLE).to_pylist(), key=_key)


def test_the_daily_report_is_exact_as_the_landing_grows_and_under_re_runs(
    spark: Any, tmp_path: Path
) -> None:
    landing = Landing(tmp_path / "out")
    messages = list(DATA.messages(SITES, METERS, COUNT))
    first = list(DATA.messages(SITES, METERS, FIRST))  # rounds 0..FIRST-1
    assert messages[: len(first)] == first
    landing.land(first)
    warehouse, checkpoint = tmp_path / "warehouse", tmp_path / "checkpoint"

    ctx = run_job(spark, landing.root, warehouse, checkpoint)
    assert table(ctx) == expected(FIRST)
    assert {r["date"] for r in table(ctx)} == {"2026-01-05", "2026-01-06"}

    landing.land(messages[len(first) :])  # the second day's rest lands: that day again, whole
    ctx = run_job(spark, landing.root, warehouse, checkpoint)
    want = expected(COUNT)
    assert table(ctx) == want
    assert len(want) == SITES * METERS * 2
    assert sum(r["sags"] for r in want) == 14 and sum(r["readings"] for r in want) == 240

    ctx = run_job(spark, landing.root, warehouse, checkpoint)  # nothing new: nothing written
    assert ctx.counts.written == 0
    assert table(ctx) == want
    ctx = run_job(spark, landing.root, warehouse, tmp_path / "fresh")  # every day again
    assert ctx.counts.written == len(want)
    assert table(ctx) == want
