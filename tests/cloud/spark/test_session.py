"""The settings of an embedded Spark job on a small input: cheap to start, nothing to adapt."""

from __future__ import annotations

from pathlib import Path

from headwater.cloud.spark._session import SMALL_BYTES, SMALL_JOB, small_job_conf


def test_a_small_input_run_embedded_gets_the_small_job_settings(tmp_path: Path) -> None:
    (tmp_path / "date=2026-11-24").mkdir()
    (tmp_path / "date=2026-11-24" / "part-1.parquet").write_bytes(b"x" * 4096)
    assert small_job_conf(tmp_path) == SMALL_JOB
    assert small_job_conf(tmp_path, spark_master="local[2]") == SMALL_JOB
    assert "-XX:TieredStopAtLevel=1" in SMALL_JOB["spark.driver.extraJavaOptions"]


def test_a_big_input_or_a_cluster_keeps_sparks_defaults(tmp_path: Path) -> None:
    with (tmp_path / "part-1.parquet").open("wb") as f:
        f.truncate(SMALL_BYTES)  # sparse: no disk spent
    assert small_job_conf(tmp_path) == {}
    assert small_job_conf(tmp_path.parent / "nothing-here") == SMALL_JOB
    assert small_job_conf(tmp_path.parent / "nothing-here", spark_master="spark://h:7077") == {}
