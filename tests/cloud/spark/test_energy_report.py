"""The energy example's Spark job (``examples/energy/daily_report.py``) with real PySpark, over
a landing its own topology wrote (``LocalRun``: the example's bolts and landing sinks, the
publisher's messages in place of the agent's log): each day's report is exact against an
offline recomputation, after the landing grows and after any re-run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from headwater.spark import JobContext

from ._energy import COUNT, DATA, FIRST, JOB, METERS, SITES, Landing, expected, key
from ._spark import GATEWAY_SOCKET, spark_fixture

pytestmark = [pytest.mark.timeout(600), GATEWAY_SOCKET]


spark = spark_fixture("headwater-test-energy", "module")


def run_job(spark: Any, landing: Path, warehouse: Path, checkpoint: Path) -> JobContext:
    ctx = JobContext(
        spark, name="daily_report", landing=landing, warehouse=warehouse, checkpoint=checkpoint
    )
    JOB.run(spark, ctx)
    return ctx


def table(ctx: JobContext) -> list[dict[str, Any]]:
    return sorted(ctx.warehouse.read(JOB.TABLE).to_pylist(), key=key)


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
