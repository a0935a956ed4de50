"""The driver of a user's Spark job: one process that runs ``run(spark, ctx)`` in its mode.

    python -m headwater.cloud.spark.driver --job FILE --name NAME --landing DIR
        --warehouse DIR --checkpoint DIR --workdir DIR [--param KEY=VALUE ...]
        [--every SECONDS | --continuous] [--interval SECONDS] [--spark-master URL]

Started by a worker (supervised: restarted with backoff when it exits non-zero)
or in the foreground by ``headwater spark run``. Modes:

- once (no flag): run the job, wait for the streaming queries it started, exit 0;
- ``--every S``: run, wait until S seconds after that run started, run again,
  forever; a restarted driver whose status file says the last run succeeded less
  than S ago waits the rest first (a crash does not bring the next run forward);
- ``--continuous``: run the job (it starts its queries with ``ctx.trigger(writer)``:
  a micro-batch every ``--interval`` seconds) and watch them: one that fails ends
  the driver with its error; when a dataset a query streams grows a column (the
  landing's ``_schema.json``), the queries are stopped and the job run again on
  the same checkpoints, so the column is read with no restart by anyone.

Exit status: 0 done (or stopped by SIGTERM), 1 the job failed (a run raised or
called sys.exit, a query failed, a continuous job with no query running, Spark did
not start), 2 a bad command line, 3 a job file that cannot be run (``_job_file``),
130 Ctrl-C. The
worker restarts any non-zero exit with backoff and reports a crash loop: a job
file that does not import fails the same way at every start, so it shows as one.
What the driver does is in ``WORKDIR/status.json`` and its beats in
``WORKDIR/c0.alive`` (``_job_status``); its log is its stdout and stderr.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
import time
import traceback
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from headwater.common._exceptions import HeadwaterError, StartupStopped

from ._datasets import DatasetError, Landing, Layout
from ._driver_config import DriverConfig, one_line, parse, read_registry
from ._job import BoundLanding, JobContext
from ._job_file import Job, JobFileError, load_job
from ._job_status import Heart, Status
from ._session import session, small_job_conf, stoppable_start

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

OK, FAILED, USAGE, JOB_FILE, INTERRUPTED = 0, 1, 2, 3, 130
_DEFAULTS: dict[int, Any] = {
    signal.SIGTERM: signal.SIG_DFL,
    signal.SIGINT: signal.default_int_handler,
}
SCHEMA_EVERY_S = 2.0  # how often a continuous job's streamed datasets' schemas are looked at


class WatchedLanding(BoundLanding):
    """The job's landing, remembering the layout of each dataset it streams."""

    def __init__(self, landing: Landing, spark: SparkSession, ctx: JobContext) -> None:
        super().__init__(landing, spark, ctx.counts)
        self.streamed: dict[str, Layout] = {}

    def stream(
        self, name: str, *, source: str = "files", max_files: int | None = None
    ) -> DataFrame:
        layout = Landing(self.root).layout(name)
        df = super().stream(name, source=source, max_files=max_files)
        self.streamed[name] = layout
        return df


class Driver:
    """Runs one job in its mode (module doc); ``main()`` returns the exit status."""

    def __init__(self, cfg: DriverConfig) -> None:
        self.cfg = cfg
        self.status: Status | None = None
        self.stopping = 0  # the signal that asked for a stop, once one did
        self.wake = threading.Event()
        self.failures: list[str] = []  # this run's queries that failed (the listener's)
        self.names: dict[str, str] = {}  # query id -> name

    def main(self) -> int:
        self.cfg.workdir.mkdir(parents=True, exist_ok=True)
        self.status = status = Status(self.cfg.workdir, self.cfg.name, self.cfg.mode)
        status.write()
        heart = Heart(self.cfg.workdir, status).start()
        try:
            return self._main(status)
        finally:
            heart.stop()
            status.write()

    def _main(self, status: Status) -> int:
        try:
            job = load_job(self.cfg.job)
        except JobFileError as e:
            return self._fail(status, str(e), JOB_FILE)
        ours = _no_session()  # else a caller's (a test's, in this process): left running
        before: dict[int, Any] = {}
        try:
            with stoppable_start():
                spark = session(
                    f"headwater-job-{self.cfg.name}",
                    self.cfg.master,
                    conf=small_job_conf(self.cfg.landing, spark_master=self.cfg.master),
                )
                if ours:
                    spark.sparkContext.setLogLevel("ERROR")
                for sig in (signal.SIGTERM, signal.SIGINT):  # in force once started
                    before[sig] = signal.signal(sig, self._on_signal(spark))
        except StartupStopped as stop:
            self.stopping = stop.signum
            return self._stopped(status)
        except HeadwaterError as e:
            return self._fail(status, str(e), FAILED)
        except Exception as e:  # the JVM did not start, or the master is not there
            where = self.cfg.master or "local[*]"
            return self._fail(status, f"could not start Spark on {where}: {one_line(e)}", FAILED)
        listener = _listener(self)
        spark.streams.addListener(listener)
        try:
            if self.cfg.continuous:
                code = self._continuous(spark, job, status)
            elif self.cfg.every_s:
                code = self._every(spark, job, status, self.cfg.every_s)
            else:
                code = self._once(spark, job, status)
            return self._stopped(status) if self.stopping else code
        finally:
            with contextlib.suppress(Exception):  # a JVM gone: the job's error says it
                for q in spark.streams.active:
                    q.stop()
                spark.streams.removeListener(listener)
                if ours:
                    spark.stop()
            for signum, handler in before.items():
                signal.signal(signum, handler)

    # -- the modes ----------------------------------------------------------------------
    def _once(self, spark: SparkSession, job: Job, status: Status) -> int:
        error = self._run(spark, job, status)
        if error:
            return self._fail(status, error, FAILED)
        status.set("succeeded")
        return OK

    def _every(self, spark: SparkSession, job: Job, status: Status, every: float) -> int:
        last = status.previous_run
        if last.get("ok") is True and isinstance(last.get("started"), int | float):
            # (never more than a period: a clock set back must not hold it for longer)
            self._wait_until(status, min(float(last["started"]), time.time()) + every)
        while not self.stopping:
            started = time.time()
            error = self._run(spark, job, status)
            if error:
                return self._fail(status, error, FAILED)
            self._wait_until(status, started + every)
        return OK

    def _continuous(self, spark: SparkSession, job: Job, status: Status) -> int:
        ctx = self._context(spark)
        self.failures.clear()
        self.wake.clear()
        status.begin_run(lambda: (ctx.counts.read, ctx.counts.written))
        error = self._call(job, spark, ctx)
        if not error and not spark.streams.active and not self.stopping:
            error = (
                "run(spark, ctx) returned with no streaming query running: a continuous job "
                "starts its queries (ctx.trigger(df.writeStream...).start()) and returns"
            )
        seen = time.monotonic()
        while not error and not self.stopping:
            self.wake.wait(0.5)
            error = self._query_failure()
            if error or self.stopping:
                break
            if not spark.streams.active:
                error = "no streaming query runs any more: the job's queries stopped"
            elif time.monotonic() - seen >= SCHEMA_EVERY_S:
                seen = time.monotonic()
                grown = _grown(ctx)
                if grown:
                    print(f"{grown}: restarting the job's queries to read it", flush=True)
                    for q in spark.streams.active:
                        q.stop()
                    error = self._call(job, spark, ctx)
        if error and not self.stopping:
            status.end_run(error)
            return self._fail(status, error, FAILED)
        status.end_run()
        return OK

    # -- one run ------------------------------------------------------------------------
    def _context(self, spark: SparkSession) -> JobContext:
        cfg = self.cfg
        ctx = JobContext(
            spark,
            name=cfg.name,
            landing=cfg.landing,
            warehouse=cfg.warehouse,
            checkpoint=cfg.checkpoint,
            params=cfg.params,
            continuous=cfg.continuous,
            interval_s=cfg.interval_s,
            registry=cfg.registry,
        )
        ctx.landing = WatchedLanding(Landing(cfg.landing), spark, ctx)
        return ctx

    def _run(self, spark: SparkSession, job: Job, status: Status) -> str:
        """One run that ends (once, every): the job, then the queries it left running;
        its error line, or ""."""
        ctx = self._context(spark)
        self.failures.clear()
        self.wake.clear()
        status.begin_run(lambda: (ctx.counts.read, ctx.counts.written))
        print(f"run {status.doc['runs']} of {self.cfg.name} starts", flush=True)
        error = self._call(job, spark, ctx)
        while not error and not self.stopping and spark.streams.active:
            try:
                for q in spark.streams.active:
                    q.awaitTermination()
            except Exception as e:
                error = one_line(e)
        _drain(spark)  # the queries' last progress reaches the listener
        error = error or self._query_failure()
        # a run a stop cut short did not succeed: a driver --every runs it again at its start
        status.end_run(
            f"stopped ({signal.Signals(self.stopping).name})" if self.stopping else error
        )
        run = status.doc["last_run"]
        if not error and not self.stopping:
            took = run["ended"] - run["started"]
            print(
                f"run {status.doc['runs']} of {self.cfg.name} done in {took:.1f} s: "
                f"{run['rows_read']} rows read, {run['rows_written']} written",
                flush=True,
            )
        return "" if self.stopping else error

    def _call(self, job: Job, spark: SparkSession, ctx: JobContext) -> str:
        """``job(spark, ctx)``; its error line or "" (its traceback: to the log)."""
        try:
            job(spark, ctx)
        except SystemExit as e:  # the driver ends as its run says, not as the job's code does
            return (
                f"run(spark, ctx) called sys.exit({e.code!r}): a job returns when done, or "
                "raises to fail"
            )[:500]
        except Exception as e:
            if self.stopping:
                return ""
            traceback.print_exc()
            sys.stderr.flush()
            return one_line(e)
        return ""

    def _query_failure(self) -> str:
        """The first failure of a query of this run (the listener's), or ""."""
        return self.failures[0] if self.failures else ""

    # -- waiting, stopping, failing ----------------------------------------------------
    def _wait_until(self, status: Status, when: float) -> None:
        if when - time.time() > 0 and not self.stopping:
            status.set("waiting")
            print(f"next run of {self.cfg.name} in {when - time.time():.0f} s", flush=True)
            while not self.stopping and when - time.time() > 0:
                self.wake.wait(min(when - time.time(), 1.0))

    def _on_signal(self, spark: SparkSession) -> Any:
        def stop(signum: int, frame: object) -> None:
            if self.stopping:
                return
            self.stopping = signum
            self.wake.set()
            # never into the JVM from the handler (the main thread may be inside a Py4J call)
            threading.Thread(target=_halt, args=(spark,), daemon=True, name="stop").start()

        return stop

    def _stopped(self, status: Status) -> int:
        print(f"{self.cfg.name}: stopped", flush=True)
        status.set("stopped")
        return INTERRUPTED if self.stopping == signal.SIGINT else OK

    def _fail(self, status: Status, error: str, code: int) -> int:
        print(f"{self.cfg.name}: {error}", file=sys.stderr, flush=True)
        status.set("failed", error)
        return code


def _no_session() -> bool:
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        return True  # session() says what to install
    return SparkSession.getActiveSession() is None


def _halt(spark: SparkSession) -> None:
    """Stop the queries and cancel Spark's jobs: the job's run returns or raises."""
    for q in spark.streams.active:
        with contextlib.suppress(Exception):
            q.stop()
    with contextlib.suppress(Exception):
        spark.sparkContext.cancelAllJobs()


def _drain(spark: SparkSession) -> None:
    """Wait until Spark's listener bus has delivered what was posted (best effort)."""
    with contextlib.suppress(Exception):
        spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()


def _grown(ctx: JobContext) -> str:
    """A dataset the job streams whose columns changed since its stream was made: which."""
    landing = ctx.landing
    if not isinstance(landing, WatchedLanding):
        return ""
    for name, layout in landing.streamed.items():
        try:
            now = Landing(landing.root).layout(name)
        except DatasetError:
            continue
        if now != layout:
            added = [c for c in now.names() if c not in layout.names()]
            return f"dataset {name!r} grew {', '.join(added) or 'a change of its columns'}"
    return ""


def _listener(driver: Driver) -> Any:
    """A streaming query listener that counts the queries' batches and rows into the
    driver's status, logs a line per batch with rows, and keeps the queries' failures."""
    from pyspark.sql.streaming.listener import StreamingQueryListener

    class Listener(StreamingQueryListener):
        def onQueryStarted(self, event: Any) -> None:
            driver.names[str(event.id)] = str(event.name)

        def onQueryProgress(self, event: Any) -> None:
            p = event.progress
            rows = int(p.numInputRows)
            assert driver.status is not None
            driver.status.stats.progress(p.name, str(p.runId), int(p.batchId), rows)
            if rows:
                print(f"query {p.name} batch {p.batchId}: {rows} rows in", flush=True)

        def onQueryIdle(self, event: Any) -> None:
            pass

        def onQueryTerminated(self, event: Any) -> None:
            if event.exception and not driver.stopping:
                first = one_line(str(event.exception))
                name = driver.names.get(str(event.id), str(event.id))
                driver.failures.append(f"query {name} failed: {first}"[:500])
                driver.wake.set()

    return Listener()


def main(argv: Sequence[str] | None = None) -> int:
    """The driver's process: its command line, then ``Driver.main()``."""
    cfg = parse(sys.argv[1:] if argv is None else argv)
    if cfg.registry_stdin:  # a submitted job's registry: its token, never on the command line
        try:
            cfg = replace(cfg, registry=read_registry(sys.stdin.readline(1 << 16)))
        except HeadwaterError as e:
            print(e, file=sys.stderr, flush=True)
            return 2
    return Driver(cfg).main()
