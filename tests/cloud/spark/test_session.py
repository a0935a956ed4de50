"""The settings of an embedded Spark job on a small input: cheap to start, nothing to adapt."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from headwater.cloud.spark._session import SMALL_BYTES, SMALL_JOB, small_job_conf, stoppable_start
from headwater.common._exceptions import StartupStopped


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


def test_a_stop_during_the_start_is_the_stop_whatever_the_clean_up_raised() -> None:
    """A SIGTERM while Spark starts raises ``StartupStopped`` where the start was; PySpark's
    clean-up on its way out may call the JVM just killed and raise its own error (seen under
    load: ``ConnectionRefusedError``). What leaves the block is still the stop."""
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(StartupStopped) as stop, stoppable_start():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 0)  # (the handler runs before the next bytecode)
        except StartupStopped:
            raise ConnectionRefusedError(111, "Connection refused") from None
    assert stop.value.signum == signal.SIGTERM
    assert isinstance(stop.value.__cause__, ConnectionRefusedError)
    assert signal.getsignal(signal.SIGTERM) is before
