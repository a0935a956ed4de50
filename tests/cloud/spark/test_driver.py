"""A user's Spark job run by its driver: ``headwater spark run`` with real PySpark over an
``orders`` dataset landed by the real ``LandingSink``; exact sums and an exact status file.
Job files that cannot be run and bad arguments: one line, exit status 3 and 2, no Spark.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from headwater._cli import main
from tests._wait import wait_for

from ..._workers import one_worker
from ._orders import ONCE_JOB, RAISING_JOB, SINK_FAILS_JOB, Orders, orders, table, totals
from ._spark import GATEWAY_SOCKET, spark_fixture

pytestmark = [pytest.mark.timeout(600), GATEWAY_SOCKET, one_worker(__name__)]


spark = spark_fixture("headwater-test-driver", "module")


def cli(*argv: str) -> tuple[int, str, str]:
    """``headwater ARGV`` in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
    return code, out.getvalue(), err.getvalue()


def status(path: Path) -> dict[str, Any]:
    """The status file, its times checked (numbers, in order) and taken out."""
    doc: dict[str, Any] = json.loads(path.read_text())
    run = doc["last_run"]
    assert isinstance(doc.pop("pid"), int)
    assert run["started"] <= run["ended"] <= doc.pop("updated"), doc
    run["took"] = run.pop("ended") - run.pop("started")
    return doc


def test_once_runs_a_job_and_a_job_that_raises(spark: Any, tmp_path: Path) -> None:
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    lander = Orders(landing)
    lander.land(orders(0, 40))
    job = tmp_path / "shop_sums.py"
    job.write_text(ONCE_JOB)
    folders = ("--landing", str(landing), "--warehouse", str(warehouse))
    code, out, err = cli("spark", "run", str(job), *folders, "--param", "table=totals")
    assert code == 0, out + err
    assert table(warehouse, "totals", ("total", "orders")) == totals(lander.landed)
    groups = len(totals(lander.landed))
    assert groups == 6
    assert re.fullmatch(
        rf"shop_sums: 40 rows read, {groups} rows written in \d+\.\d s", out.splitlines()[-1]
    ), out
    path = warehouse / "_checkpoints" / "spark-jobs" / "shop_sums" / "_driver" / "status.json"
    doc = status(path)
    took = doc["last_run"].pop("took")
    assert 0 < took < 300
    assert doc == {
        "name": "shop_sums",
        "state": "succeeded",
        "mode": "once",
        "runs": 1,
        "last_run": {"ok": True, "rows_read": 40, "rows_written": 6, "error": ""},
        "queries": [],
    }
    assert (path.parent / "c0.alive").is_file()

    # a second run over more orders: the same table, upserted by key, exact; runs counted on
    lander.land(orders(40, 17))
    code, out, err = cli("spark", "run", str(job), *folders, "--param", "table=totals")
    assert code == 0, out + err
    assert table(warehouse, "totals", ("total", "orders")) == totals(lander.landed)
    doc = status(path)
    doc["last_run"].pop("took")
    assert (doc["runs"], doc["last_run"]) == (
        2,
        {"ok": True, "rows_read": 57, "rows_written": 6, "error": ""},
    )

    # a job that raises: its error line in the status and last on stderr, exit status 1
    bad = tmp_path / "bad_shop.py"
    bad.write_text(RAISING_JOB)
    code, out, err = cli("spark", "run", str(bad), *folders, "--param", "shop=nowhere")
    assert code == 1, out + err
    assert err.splitlines()[-1] == "bad_shop: ValueError: no shop named nowhere", err
    assert "Traceback" in err  # the job's own: the log has it
    doc = status(warehouse / "_checkpoints" / "spark-jobs" / "bad_shop" / "_driver" / "status.json")
    doc["last_run"].pop("took")
    assert doc == {
        "name": "bad_shop",
        "state": "failed",
        "mode": "once",
        "runs": 1,
        "last_run": {
            "ok": False,
            "rows_read": 0,
            "rows_written": 0,
            "error": "ValueError: no shop named nowhere",
        },
        "queries": [],
    }


def driver(tmp_path: Path, job: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater.cloud.spark.driver",
            *("--job", str(job), "--name", "broken"),
            *("--landing", str(tmp_path), "--warehouse", str(tmp_path / "w")),
            *("--checkpoint", str(tmp_path / "c"), "--workdir", str(tmp_path / "wd")),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_job_files_that_cannot_run(tmp_path: Path) -> None:
    cases = {
        "imports_nothing.py": (
            "import json\nimport no_such_module_here\n",
            "does not import: ModuleNotFoundError: No module named 'no_such_module_here' (line 2)",
        ),
        "no_run.py": (
            "def walk(spark, ctx):\n    pass\n",
            "defines no run(spark, ctx): a job file defines the function the driver calls "
            "with the Spark session and the job's context",
        ),
        "one_param.py": (
            "def run(spark):\n    pass\n",
            ": run(spark) does not take two parameters: define run(spark, ctx)",
        ),
        "syntax.py": (
            "def run(spark, ctx)\n",
            "does not import: SyntaxError: expected ':' (line 1)",
        ),
    }
    for name, (text, said) in cases.items():
        job = tmp_path / name
        job.write_text(text)
        done = driver(tmp_path, job)
        sep = "" if said.startswith(":") else " "
        assert done.returncode == 3, (name, done.stdout, done.stderr)
        assert done.stderr == f"broken: {job}{sep}{said}\n", (name, done.stderr)
        doc = json.loads((tmp_path / "wd" / "status.json").read_text())
        assert (doc["state"], doc["last_run"]["ok"], doc["last_run"]["error"]) == (
            "failed",
            False,
            f"{job}{sep}{said}",
        ), name
        assert "Traceback" not in done.stdout + done.stderr
    # through the CLI: the same line, no traceback
    (tmp_path / "landing").mkdir()
    code, out, err = cli(
        "spark", "run", str(tmp_path / "no_run.py"), "--landing", str(tmp_path / "landing"),
        "--warehouse", str(tmp_path / "w"),
    )  # fmt: skip
    assert (code, out) == (3, ""), err
    assert err.splitlines() == [f"no_run: {tmp_path / 'no_run.py'} {cases['no_run.py'][1]}"]


def test_spark_run_bad_arguments(tmp_path: Path) -> None:
    job = tmp_path / "job.py"
    job.write_text("def run(spark, ctx):\n    pass\n")
    (tmp_path / "landing").mkdir()
    folders = ["--landing", str(tmp_path / "landing"), "--warehouse", str(tmp_path / "w")]
    cases = [
        (["--every", "3x"], "argument --every: '3x': give a duration such as 30s, 10m or 1h"),
        (["--every", "10m", "--continuous"], "argument --continuous: not allowed with argument "
         "--every"),
        (["--param", "oops"], "--param 'oops': give KEY=VALUE, e.g. day=2026-11-28"),
        (["--name", "a b"], "--name 'a b': 1-64 letters, digits, '_', '-', '.'"),
        (["--spark-master", "yarn"], "--spark-master must be local[N], local[*] or "
         "spark://HOST:PORT, got 'yarn'"),
    ]  # fmt: skip
    for extra, said in cases:
        code, out, err = cli("spark", "run", str(job), *folders, *extra)
        assert (code, out) == (2, ""), (extra, err)
        assert err.splitlines()[-1].endswith(said), (extra, err)
        assert "Traceback" not in err
    code, out, err = cli(
        "spark", "run", str(job), "--landing", str(tmp_path / "nowhere"), "--warehouse", "w"
    )
    assert (code, err) == (
        2,
        f"headwater: error: --landing {tmp_path / 'nowhere'}: no such folder\n",
    )
    code, out, err = cli(
        "spark", "run", str(job), "--landing", str(tmp_path), "--warehouse", str(tmp_path)
    )
    assert code == 2 and "overlap" in err, err


def test_every_runs_again_and_a_restart_waits(spark: Any, tmp_path: Path) -> None:
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    lander = Orders(landing)
    lander.land(orders(0, 9))
    job = tmp_path / "every_sums.py"
    job.write_text(ONCE_JOB)
    path = warehouse / "_checkpoints" / "spark-jobs" / "every_sums" / "_driver" / "status.json"

    def stop_when(what: str, cond: Any) -> threading.Thread:
        """Ctrl-C to this process (the driver's handler) once ``cond(status)`` holds."""

        def watch() -> None:
            wait_for(lambda: path.is_file() and cond(json.loads(path.read_text())), 240, what)
            os.kill(os.getpid(), signal.SIGINT)

        thread = threading.Thread(target=watch, daemon=True)
        thread.start()
        return thread

    argv = ["spark", "run", str(job), "--landing", str(landing), "--warehouse", str(warehouse)]
    argv += ["--param", "table=totals"]
    watcher = stop_when("a second run", lambda d: d["runs"] == 2 and d["state"] == "waiting")
    code, out, err = cli(*argv, "--every", "15s")  # a run takes less, even on a busy machine
    watcher.join()
    assert code == 130, out + err
    doc = json.loads(path.read_text())
    assert (doc["state"], doc["mode"], doc["runs"], doc["last_run"]["ok"]) == (
        "stopped",
        "every",
        2,
        True,
    )
    assert table(warehouse, "totals", ("total", "orders")) == totals(lander.landed)
    assert out.count("run 2 of every_sums done") == 1, out

    # restarted with a longer period: its last run succeeded just now, so it waits first
    watcher = stop_when("the restart waiting", lambda d: d["state"] == "waiting")
    code, out, err = cli(*argv, "--every", "1h")
    watcher.join()
    assert code == 130, out + err
    assert "starts" not in out and re.search(r"next run of every_sums in 3\d\d\d s", out), out
    doc = json.loads(path.read_text())
    assert (doc["state"], doc["runs"]) == ("stopped", 2)


def test_a_query_that_fails(spark: Any, tmp_path: Path) -> None:
    landing, warehouse = tmp_path / "landing", tmp_path / "warehouse"
    Orders(landing).land(orders(0, 5))
    job = tmp_path / "sink_fails.py"
    job.write_text(SINK_FAILS_JOB)
    code, out, err = cli(
        "spark", "run", str(job), "--landing", str(landing), "--warehouse", str(warehouse)
    )
    assert code == 1, out + err
    assert err.splitlines()[-1] == "sink_fails: KeyError: 'no shop 5'", err
    doc = json.loads(
        (warehouse / "_checkpoints/spark-jobs/sink_fails/_driver/status.json").read_text()
    )
    assert (doc["state"], doc["last_run"]["error"]) == ("failed", "KeyError: 'no shop 5'"), doc
