"""Attacks on a worker's Spark jobs by the job itself: its driver owns its folder, so its
``status.json`` and ``driver.log`` are the job's to replace (a FIFO, a symlink, bytes no
protobuf string takes); the worker must stay well and report on."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from headwater.cloud.master._spark_check import JobRefused, check_spec, job_problem
from headwater.cloud.master._spark_jobs import status_view
from headwater.cloud.spark._driver import Driver
from headwater.cloud.spark._driver_config import DriverConfig, parse
from headwater.cloud.spark._job import Counts, JobContext, Warehouse
from headwater.common._exceptions import HeadwaterError
from headwater.common.node._spark_jobs import DRIVER_ENV, DRIVER_LOG, SparkJobRunner
from headwater.common.runtime._procs import spawn
from headwater.common.wire.proto import runtime_pb2 as pb

from .test_spark_job_rules import _runner as bare_runner


def _runner(tmp_path: Path) -> tuple[SparkJobRunner, Path]:
    runner = bare_runner(tmp_path)
    run = pb.RunContainer(topology="j", package="sha256:" + "0" * 64, entry="j.py")
    run.kind, run.job.mode = "spark-job", "continuous"
    runner.orders["j"] = (run, tmp_path / "j.py")
    home = runner.home("j")
    home.mkdir(parents=True)
    return runner, home


def _statuses_within(runner: SparkJobRunner, deadline_s: float) -> list[pb.SparkJobStatus]:
    out: list[list[pb.SparkJobStatus]] = []
    reader = threading.Thread(target=lambda: out.append(runner.statuses()), daemon=True)
    reader.start()
    reader.join(deadline_s)
    assert out, f"statuses() did not return within {deadline_s} s"
    return out[0]


def test_a_status_fifo_does_not_block_the_worker(tmp_path: Path) -> None:
    runner, home = _runner(tmp_path)
    os.mkfifo(home / "status.json")
    try:
        (s,) = _statuses_within(runner, 5.0)
        assert s.state == "starting"
    finally:  # a reader stuck in open() (the bug) is let go: a writer comes and goes
        with contextlib.suppress(OSError):  # no reader waits: none was stuck
            os.close(os.open(home / "status.json", os.O_WRONLY | os.O_NONBLOCK))


def test_a_status_symlink_is_not_followed(tmp_path: Path) -> None:
    runner, home = _runner(tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps({"state": "the worker's secret", "updated": 3.0}))
    (home / "status.json").symlink_to(secret)
    (s,) = runner.statuses()
    assert (s.state, s.updated) == ("starting", 0.0)


def test_status_text_no_protobuf_takes_and_non_finite_numbers(tmp_path: Path) -> None:
    runner, home = _runner(tmp_path)
    (home / "status.json").write_text(
        '{"state": "run\\ud800ning", "updated": Infinity, "runs": NaN,'
        ' "last_run": {"started": -Infinity, "ended": NaN, "error": "bad \\udfff"}}'
    )
    (s,) = runner.statuses()
    s.SerializeToString()  # the node's report must go out
    assert (s.state, s.updated, s.runs, s.started, s.ended) == ("run\ufffdning", 0, 0, 0, 0)
    assert s.error == "bad \ufffd"


def test_a_driver_log_symlink_is_not_written_through(tmp_path: Path) -> None:
    target = tmp_path / "not-the-log"
    target.write_text("kept\n")
    link = tmp_path / "driver.log"
    link.symlink_to(target)
    try:
        proc = spawn(["-c", "print('planted')"], log_path=str(link))
    except OSError:
        pass  # refused: nothing written through the link
    else:
        proc.wait(30)
    assert target.read_text() == "kept\n"


def test_a_planted_driver_log_is_replaced_before_the_driver_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, home = _runner(tmp_path)
    monkeypatch.setenv(DRIVER_ENV, "json.tool")  # any module: it ends at once
    target = tmp_path / "the-workers-file"
    target.write_text("kept\n")
    (home / DRIVER_LOG).symlink_to(target)
    runner._start("j")
    assert runner.procs["j"].wait(30) != 0
    (home / DRIVER_LOG).unlink()
    (home / DRIVER_LOG).mkdir()  # a folder in its place: moved aside, not an OSError
    (home / DRIVER_LOG / "x").write_text("the job's")
    runner._start("j")
    assert runner.procs["j"].wait(30) != 0  # json.tool refuses the driver's arguments
    assert target.read_text() == "kept\n"
    log = home / DRIVER_LOG
    assert not log.is_symlink() and "usage" in log.read_text()


def test_a_job_calling_sys_exit_fails_its_run_with_one_line(tmp_path: Path) -> None:
    cfg = DriverConfig(tmp_path / "j.py", "j", tmp_path, tmp_path, tmp_path, tmp_path)
    driver = Driver(cfg)

    def run(spark: object, ctx: object) -> None:
        sys.exit(0)

    error = driver._call(run, None, None)  # type: ignore[arg-type]
    assert error == (
        "run(spark, ctx) called sys.exit(0): a job returns when done, or raises to fail"
    )


def test_a_once_driver_that_exits_0_mid_run_is_no_success(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner, home = _runner(tmp_path)
    runner.orders["j"][0].job.mode = "once"
    monkeypatch.setenv(DRIVER_ENV, "this")  # exits 0 at once, as a job's os._exit(0)
    (home / "status.json").write_text(json.dumps({"state": "running", "runs": 1}))
    runner._start("j")
    assert runner.procs["j"].wait(30) == 0
    (s,) = runner.statuses()
    assert (s.state, s.error) == (
        "failed",
        "the driver exited 0 before its run ended (a job that calls os._exit?)",
    )
    runner.supervise()
    assert "j" not in runner.done and runner.restarts["j"] == 1  # as a failed driver is
    assert runner.procs["j"].wait(30) == 0
    (home / "status.json").write_text(json.dumps({"state": "succeeded", "runs": 1}))
    runner._start("j")
    assert runner.procs["j"].wait(30) == 0
    runner.supervise()
    assert "j" in runner.done and runner.statuses()[0].state == "succeeded"


_SPEC = 'dataset = "d"\ntime = "ts"\n[grains]\nhourly = "1 hour"\n[groups]\nsite = ["site"]\n'


def test_hostile_specs_are_refused_with_one_line() -> None:
    many = "".join(f"m{i} = 'count'\n" for i in range(10_000))
    wide = "[groups]\nwide = [" + ", ".join(f'"c{i}"' for i in range(1000)) + "]\n"
    cases = {
        b"x = " + b"[" * 5000 + b"]" * 5000: "spec.toml is not a TOML rollup spec: nested",
        b"\xff\xfe not utf-8": "spec.toml is not a TOML rollup spec: ",
        (_SPEC + "[measures]\nq = 'quantile(v, 1.2.3)'\n").encode(): (
            "spec.toml: measure 'q': the quantile must be from 0 to 1, got '1.2.3'"
        ),
        (_SPEC + "[measures]\n" + many).encode(): ("spec.toml: 10000 measures; at most 256"),
        (
            _SPEC.replace('[groups]\nsite = ["site"]\n', wide) + "[measures]\nn = 'count'\n"
        ).encode(): "spec.toml: group 'wide' has 1000 key columns; at most 32",
        (_SPEC + '[measures]\n"n\\n" = "count"\n').encode(): (
            "spec.toml: measures names 'n\\n': letters, digits and '_'"
        ),
        (_SPEC.replace("hourly", "_driver") + "[measures]\nn = 'count'\n").encode(): (
            "spec.toml: grain '_driver': a grain's name starts with a letter"
        ),
        (_SPEC.replace('"1 hour"', '"1 hour\\n"') + "[measures]\nn = 'count'\n").encode(): (
            "spec.toml: grain 'hourly' = '1 hour\\n': write e.g. '1 hour', '1 day'"
        ),
    }
    for text, said in cases.items():
        with pytest.raises(JobRefused) as refused:
            check_spec(text, "spec.toml")
        message = str(refused.value)
        assert message.startswith(said) and "\n" not in message, (said, message)


def test_a_job_named_like_an_option_reaches_its_driver_as_its_name(tmp_path: Path) -> None:
    runner, home = _runner(tmp_path)
    run = runner.orders["j"][0]
    run.topology = "-x"
    args = runner.args(run, tmp_path / "j.py", home)
    assert parse(args[2:]).name == "-x"  # args: -m MODULE, then the driver's own


def test_a_jobs_table_and_query_names_stay_in_their_folders(tmp_path: Path) -> None:
    import pyarrow as pa

    warehouse = Warehouse(tmp_path / "wh", Counts())
    rows = pa.table({"k": [1], "date": ["2026-01-01"]})
    for bad in ("../../x", "t\n", ".hidden", "_checkpoints", ""):
        with pytest.raises(HeadwaterError, match="letters, digits"):
            warehouse.upsert(bad, rows, ["k"])
        with pytest.raises(HeadwaterError, match="letters, digits"):
            warehouse.read(bad)
    ctx = SimpleNamespace(checkpoint=tmp_path / "cp")
    for bad in ("../x", "q\n"):
        with pytest.raises(HeadwaterError, match="letters, digits"):
            JobContext.checkpoint_for(ctx, bad)  # type: ignore[arg-type]
    assert not (tmp_path / "x").exists() and not (tmp_path / "wh").exists()


def test_a_landing_and_warehouse_that_overlap_are_refused() -> None:
    said = "landing {} and warehouse {} overlap: give the warehouse a folder of its own"
    for landing, warehouse in (
        ("/data/in", "/data/in"),
        ("/data/in", "/data/in/wh"),
        ("/data/in/x/..", "/data/in/"),
        ("/data", "/data/in"),
    ):
        assert job_problem("once", 0.0, "", {}, [landing, warehouse]) == said.format(
            repr(landing), repr(warehouse)
        )
    assert job_problem("once", 0.0, "", {}, ["/data/in", "/data/inn"]) is None
    assert job_problem("once", 0.0, "", {}, ["", "/data/in"]) is None


def test_a_spark_master_port_out_of_range_is_refused() -> None:
    for url in ("spark://h:0", "spark://h:99999"):
        assert job_problem("once", 0.0, url, {}, []) == (
            f"spark master {url!r}: give spark://HOST:PORT (or none: local mode)"
        )
    assert job_problem("once", 0.0, "spark://h:65535", {}, []) is None


def test_a_workers_non_finite_numbers_never_reach_the_api_as_nan() -> None:
    nan, inf = float("nan"), float("inf")
    s = pb.SparkJobStatus(name="j", state="running", started=inf, ended=nan, updated=-inf)
    view = status_view(s)
    json.dumps(view, allow_nan=False)  # what a browser's JSON.parse takes
    assert view["updated"] == 0.0 and view["last_run"] is None


def test_a_jobs_checkpoint_is_never_a_rollup_grains(tmp_path: Path) -> None:
    """`headwater spark rollup` keeps a grain's query in WAREHOUSE/_checkpoints/GRAIN: a job
    named "hourly" on that warehouse must not share (and corrupt) its offsets."""
    runner, home = _runner(tmp_path)
    run = runner.orders["j"][0]
    run.topology = "hourly"
    args = runner.args(run, tmp_path / "j.py", home)
    checkpoint = Path(args[args.index("--checkpoint") + 1])
    assert checkpoint == tmp_path / "warehouse" / "_checkpoints" / "spark-jobs" / "hourly"


def test_a_status_folder_does_not_fail_the_stop_order(tmp_path: Path) -> None:
    runner, home = _runner(tmp_path)
    removed: list[str] = []
    node: Any = runner.node
    node.containers, node.limits = {}, SimpleNamespace(remove=removed.append)
    (home / "status.json").mkdir()
    assert runner.statuses()[0].state == "starting"
    asyncio.run(runner.stop("j"))  # a kill's order: it must not end the worker's session
    assert runner.orders == {} and removed == ["j"]
