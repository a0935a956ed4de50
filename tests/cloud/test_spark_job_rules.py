"""What the master takes of a Spark job submission (``job_problem``), what a worker makes of a
driver's status file (``SparkJobRunner``: bounded, type-checked) and the table `headwater
spark jobs` prints."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from headwater._spark_jobs_cli import jobs_table
from headwater.cloud.master._spark_check import MAX_PARAMS, job_problem
from headwater.common._health import Health
from headwater.common.control._crashloop import CrashLoopWatch
from headwater.common.node._spark_jobs import MAX_STATUS_BYTES, SparkJobRunner
from headwater.common.wire.proto import runtime_pb2 as pb


def test_job_settings_are_checked() -> None:
    ok: tuple[str, float, str, dict[str, str], list[str]] = ("once", 0.0, "", {}, ["", "/wh"])
    assert job_problem(*ok) is None
    assert job_problem("every", 600.0, "spark://spark-master:7077", {"day": "1"}, []) is None
    cases = {
        ("daily", 0.0, "", (), ()): "mode 'daily': once, every (with every_s) or continuous",
        ("every", 0.0, "", (), ()): "every_s must be from 1 s to 366 days, got 0",
        ("once", 0.0, "local[*]", (), ()): "spark master 'local[*]': give spark://HOST:PORT",
        ("once", 0.0, "spark://h:1/x", (), ()): "spark master 'spark://h:1/x': give spark://",
        ("once", 0.0, "", (("1x", "v"),), ()): "parameter '1x': a name of letters, digits",
        ("once", 0.0, "", (("k", "v" * 1025),), ()): "parameter 'k': at most 1024 characters",
        ("once", 0.0, "", (), ("wh",)): "folder 'wh': an absolute path on the workers",
    }
    for (mode, every, master, params, folders), said in cases.items():
        problem = job_problem(mode, every, master, dict(params), list(folders))
        assert problem is not None and problem.startswith(said), problem
    many = {f"k{i}": "v" for i in range(MAX_PARAMS + 1)}
    assert job_problem("once", 0.0, "", many, []) == f"{MAX_PARAMS + 1} parameters; the limit is 64"


def _runner(tmp_path: Path) -> SparkJobRunner:
    health = Health("w1")
    node = SimpleNamespace(
        workdir=tmp_path,
        health=health,
        crash_loops=CrashLoopWatch(health),
        code_user=lambda name: None,
    )
    return SparkJobRunner(node)


def test_a_status_file_is_read_bounded_and_type_checked(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    run = pb.RunContainer(
        topology="j", package="sha256:" + "0" * 64, entry="j.py", kind="spark-job"
    )
    run.job.mode = "continuous"
    runner.orders["j"] = (run, tmp_path / "j.py")
    home = runner.home("j")
    home.mkdir(parents=True)
    (home / "status.json").write_text(
        json.dumps(
            {
                "state": "running",
                "pid": "not a pid",
                "runs": 2,
                "last_run": {"started": 5.0, "ok": True, "rows_read": 1e30, "rows_written": 4},
                "updated": True,
            }
        )
    )
    (s,) = runner.statuses()
    assert (s.name, s.state, s.mode, s.pid, s.runs) == ("j", "running", "continuous", 0, 2)
    assert (s.started, s.ok, s.rows_read, s.rows_written, s.updated) == (5.0, True, 0, 4, 0.0)
    (home / "status.json").write_bytes(b" " * (MAX_STATUS_BYTES + 1))
    assert runner.statuses()[0].state == "starting"  # too big: not read
    (home / "status.json").write_text("[1, 2]")
    assert runner.statuses()[0].state == "starting"
    args = runner.args(run, tmp_path / "j.py", home)
    assert args[args.index("--checkpoint") + 1] == str(
        tmp_path / "warehouse" / "_checkpoints" / "spark-jobs" / "j"
    )
    assert args[-1] == "--continuous" and "--every" not in args and "--spark-master" not in args


def test_the_jobs_table() -> None:
    job = {
        "name": "report",
        "state": "failed",
        "node": "w1",
        "mode": "every",
        "every_s": 600.0,
        "runs": 3,
        "last_run": {"started": 100.0, "ended": 160.0, "ok": False},
        "rows_read": 12,
        "rows_written": 0,
        "crash_loop": "",
        "last_error": "ValueError: no meters\nmore",
    }
    assert jobs_table([job], now=200.0) == [
        "job     state   node  mode        runs  last run        read  written",
        "report  failed  w1    every 600s  3     failed 40s ago  12    0",
        "    error: ValueError: no meters",
    ]
    assert jobs_table([]) == ["no Spark jobs (headwater spark submit JOB.py runs one)"]
