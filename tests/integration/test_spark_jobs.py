"""Spark jobs on the cluster: a real master and worker on loopback, jobs submitted through
the REST API and the CLI, refused, listed, killed, kept across a master restart, and their
drivers supervised by the worker.

The worker runs a stand-in for the driver here (``_standin_driver.py``, through the
documented test hook ``HEADWATER_SPARK_DRIVER``): these tests are of the cluster's side
(what the master keeps and gives, how a worker restarts a process that dies, what a viewer
sees), not of Spark. The job files are checked by the master for real (in a child process).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from headwater.common.node._users import FIRST_UID, LAST_UID
from headwater.common.security import TokenStore

from ._daemons import Daemons
from ._support import EXAMPLES, wait_for
from .test_isolation import cluster, reachable  # noqa: F401 (fixtures: a reachable folder)

pytestmark = pytest.mark.cluster
# the stand-in is a module of the tests: the worker's children find it by the repository root
STANDIN = {
    "HEADWATER_SPARK_DRIVER": "tests.integration._standin_driver",
    "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
}
JOB = b"def run(spark, ctx):\n    ctx.count(read=1)\n"


def _call(
    daemons: Daemons, method: str, path: str, data: bytes | None = None, token: str = ""
) -> tuple[int, Any]:
    request = urllib.request.Request(
        f"{daemons.http}{path}",
        data=data,
        method=method,
        headers={"Authorization": f"Bearer {token or daemons.token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _submit(daemons: Daemons, file: str, data: bytes, token: str = "", **query: Any) -> Any:
    pairs = [("file", file)] + [
        (k, v) for k, vs in query.items() for v in (vs if isinstance(vs, list) else [vs])
    ]
    return _call(daemons, "POST", f"/api/v1/spark/jobs?{urlencode(pairs)}", data, token)


def _jobs(daemons: Daemons) -> dict[str, Any]:
    return {j["name"]: j for j in daemons.api("/api/v1/spark/jobs")}


def _cli(daemons: Daemons, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "headwater",
            *args,
            "--master",
            daemons.http,
            "--token",
            daemons.token,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_refused_submissions_are_4xx_with_the_reason(daemons: Daemons, tmp_path: Path) -> None:
    daemons.start_master()
    viewer = TokenStore(tmp_path / "master" / "tokens.json").create("viewer")
    big = b"# padding\n" * (1 << 17)  # 1.25 MiB
    zipped = io.BytesIO()
    with zipfile.ZipFile(zipped, "w") as zf:
        zf.writestr("job.py", JOB)
    cases: list[tuple[str, bytes, dict[str, Any], int, str]] = [
        (
            "bad.py",
            b"raise RuntimeError('no landing here')\n",
            {},
            400,
            "bad.py does not import: RuntimeError: no landing here",
        ),
        (
            "norun.py",
            b"x = 1\n",
            {},
            400,
            "norun.py defines no run(spark, ctx): a Spark job defines that function",
        ),
        (
            "one.py",
            b"def run(spark):\n    pass\n",
            {},
            400,
            "one.py: run must take two parameters, run(spark, ctx); it is run(spark)",
        ),
        (
            "spec.toml",
            b'dataset = "d"\ntime = "ts"\n',
            {},
            400,
            "spec.toml: no 'grains'; a spec names dataset, time, grains, groups and measures",
        ),
        ("spec.toml", b"dataset = [\n", {}, 400, "spec.toml is not a TOML rollup spec: "),
        ("big.py", big, {}, 413, f"the job file is {len(big)} bytes; the limit is 1 MiB"),
        ("job.py", JOB, {"name": "../up"}, 400, "'../up' is not a Spark job name"),
        ("job.py", JOB, {"mode": "hourly"}, 400, "mode 'hourly': once, every"),
        ("job.py", JOB, {"mode": "every", "every_s": "0.5"}, 400, "every_s must be from 1 s"),
        ("job.py", JOB, {"spark_master": "yarn"}, 400, "spark master 'yarn': give spark://"),
        ("job.py", JOB, {"param": "novalue"}, 400, "param 'novalue': give KEY=VALUE"),
        ("job.py", JOB, {"landing": "rel/dir"}, 400, "folder 'rel/dir': an absolute path"),
        ("job.txt", JOB, {}, 400, "'job.txt': a job file is a .py job or a .toml spec"),
        ("pkg.zip", zipped.getvalue(), {}, 400, "a zip package needs its job file named"),
        ("pkg.zip", b"not a zip", {"entry": "job.py"}, 400, "the package is not a readable zip"),
    ]
    for file, data, query, status, reason in cases:
        code, body = _submit(daemons, file, data, **query)
        assert (code, body["error"][: len(reason)]) == (status, reason), (file, query, body)
    code, body = _submit(daemons, "job.py", JOB, token=viewer)
    assert code == 403 and "needs the admin role" in body["error"]
    assert _jobs(daemons) == {}  # nothing kept, and the master still serves
    assert list((tmp_path / "master" / "spark" / "packages").iterdir()) == []
    # a zip with its entry, and a job importing pyspark at its top (the child has it)
    code, body = _submit(daemons, "pkg.zip", zipped.getvalue(), entry="job.py", name="zipped")
    assert (code, body["name"], body["entry"]) == (201, "zipped", "job.py")
    spark_job = b"from pyspark.sql import functions as F\n\ndef run(spark, ctx):\n    F.lit(1)\n"
    code, body = _submit(daemons, "uses_spark.py", spark_job)
    assert (code, body["name"], body["state"]) == (201, "uses_spark", "waiting for a worker")
    spec = (EXAMPLES / "energy" / "rollup.toml").read_bytes()
    code, body = _submit(daemons, "rollup.toml", spec, name="energy-rollup")
    assert (code, body["entry"], body["mode"]) == (201, "rollup.toml", "once")
    bad_measure = spec.replace(b'"sum(kwh)"', b'"median(kwh)"')
    code, body = _submit(daemons, "rollup.toml", bad_measure, name="bad-rollup")
    assert code == 400 and body["error"].startswith("rollup.toml: measure 'kwh'"), body
    code, body = _submit(daemons, "uses_spark.py", spark_job)
    assert (code, body["error"]) == (
        400,
        "Spark job 'uses_spark' exists; kill it first (headwater spark kill)",
    )
    code, body = _call(daemons, "DELETE", "/api/v1/spark/jobs/uses_spark", token=viewer)
    assert code == 403
    code, body = _call(daemons, "DELETE", "/api/v1/spark/jobs/nosuch")
    assert (code, body["error"]) == (
        404,
        "no Spark job named 'nosuch' (submitted: energy-rollup, uses_spark, zipped)",
    )
    # the CLI: one line, exit status 2, no traceback
    bad = tmp_path / "bad.py"
    bad.write_bytes(b"import no_such_module_here\n")
    done = _cli(daemons, "spark", "submit", str(bad))
    assert (done.returncode, done.stderr) == (
        2,
        "headwater: error: bad.py does not import: ModuleNotFoundError: No module named "
        "'no_such_module_here'\n",
    )
    done = _cli(daemons, "spark", "submit", str(bad), "--every", "soon")
    assert done.returncode == 2 and "argument --every: 'soon': give an interval" in done.stderr


def test_jobs_survive_a_master_restart(daemons: Daemons, tmp_path: Path) -> None:
    daemons.start_master()
    job = tmp_path / "nightly.py"
    job.write_bytes(JOB)
    done = _cli(daemons, "spark", "submit", str(job), "--every", "10m", "--param", "day=1")
    assert (done.returncode, done.stdout) == (
        0,
        "submitted Spark job 'nightly' (every, waiting for a worker)\n",
    )
    before = _jobs(daemons)["nightly"]
    master = daemons.procs[0]
    master.terminate()
    master.wait(20)
    (tmp_path / "master.json").unlink()
    daemons.start_master()
    after = _jobs(daemons)["nightly"]
    keys = ("name", "package", "entry", "mode", "every_s", "params", "submitted")
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys}
    assert (after["every_s"], after["params"]) == (600.0, {"day": "1"})


def test_a_worker_supervises_the_drivers(daemons: Daemons, tmp_path: Path) -> None:
    daemons.start_master()
    daemons.start_worker("w1", STANDIN)
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "the worker to attach")
    # a once job whose driver succeeds: done, not restarted
    code, body = _submit(daemons, "job.py", JOB, name="once-ok", param=["exit=0", "k=v w"])
    assert (code, body["node"]) == (201, "w1")
    ok = wait_for(
        lambda: (j := _jobs(daemons)["once-ok"])["state"] == "succeeded" and j, 60, "success"
    )
    assert (ok["runs"], ok["rows_read"], ok["rows_written"], ok["last_error"]) == (1, 7, 3, "")
    # a continuous job whose driver fails: restarted with backoff, a crash loop shown
    code, body = _submit(daemons, "job.py", JOB, name="crashing", mode="continuous", param="exit=1")
    assert code == 201
    loop = wait_for(
        lambda: (j := _jobs(daemons)["crashing"])["crash_loop"] and j, 60, "a crash loop"
    )
    assert loop["crash_loop"].startswith("Spark job 'crashing' is crash-looping: 5 failures in ")
    assert loop["state"] == "failed" and loop["restarts"] >= 4
    assert loop["last_error"].startswith(("RuntimeError: stand-in failure 1", "the driver exited"))
    (node,) = daemons.api("/api/v1/nodes")
    assert node["health"] == "failed"
    assert any(r.startswith("crash loop: Spark job 'crashing'") for r in node["reasons"])
    # while the other restarts over and over, the once job's driver ran once
    log = tmp_path / "w1" / "spark" / "once-ok" / "driver.log"
    assert log.read_text().count("stand-in driver once-ok") == 1
    # its log through headwater logs NAME, its table through headwater spark jobs
    done = _cli(daemons, "logs", "crashing", "--tail", "2")
    lines = done.stdout.splitlines()
    assert lines[0] == (
        f"==> Spark job crashing: driver log on node w1 "
        f"({tmp_path / 'w1' / 'spark' / 'crashing' / 'driver.log'}) <=="
    )
    assert lines[1:] == ["stand-in driver crashing: job job.py, params {'exit': '1'}"] * 2
    table = _cli(daemons, "spark", "jobs").stdout.splitlines()
    assert table[0].split() == [
        "job",
        "state",
        "node",
        "mode",
        "runs",
        "last",
        "run",
        "read",
        "written",
    ]
    assert table[1].split()[:4] == ["crashing", "failed", "w1", "continuous"]
    assert table[2].startswith("    crash loop: Spark job 'crashing' is crash-looping")
    assert table[-1].split()[:5] == ["once-ok", "succeeded", "w1", "once", "1"]
    # kill: the driver stops, the record goes, the crash loop is forgotten
    done = _cli(daemons, "spark", "kill", "crashing")
    assert (done.returncode, done.stdout) == (0, "killed Spark job 'crashing'\n")
    assert set(_jobs(daemons)) == {"once-ok"}
    wait_for(lambda: daemons.api("/api/v1/nodes")[0]["health"] == "ok", 30, "a healthy worker")
    done = _cli(daemons, "spark", "kill", "crashing")
    assert (done.returncode, done.stderr) == (
        2,
        "headwater: error: no Spark job named 'crashing' (submitted: once-ok)\n",
    )


def test_a_job_moves_off_a_worker_gone_silent(daemons: Daemons, tmp_path: Path) -> None:
    """A worker that stops answering (SIGSTOP) loses its job to another after the offline
    delay; when it answers again it is told to stop its copy."""
    daemons.start_master()
    w1 = daemons.start_worker("w1", STANDIN)
    daemons.start_worker("w2", STANDIN)
    wait_for(lambda: len(daemons.api("/api/v1/nodes")) == 2, 30, "both workers to attach")
    code, body = _submit(daemons, "job.py", JOB, name="stream", mode="continuous", param="exit=0")
    assert (code, body["node"]) == (201, "w1")
    wait_for(lambda: _jobs(daemons)["stream"]["state"] == "waiting", 60, "the driver on w1")
    first = tmp_path / "w1" / "spark" / "stream" / "status.json"
    assert first.exists()
    w1.suspend()
    try:
        moved = wait_for(
            lambda: (
                (j := _jobs(daemons)["stream"])["node"] == "w2" and j["state"] == "waiting" and j
            ),
            60,
            "the job to run on w2",
        )
    finally:
        w1.resume()
    assert moved["restarts"] == 0
    wait_for(lambda: not first.exists(), 60, "w1 to stop its copy")
    assert _jobs(daemons)["stream"]["node"] == "w2"
    driver_log = tmp_path / "w2" / "spark" / "stream" / "driver.log"
    # the job reads "waiting" once its driver runs, which may not have written its line yet
    wait_for(lambda: driver_log.read_text() != "", 30, "the driver's line on w2")
    assert driver_log.read_text() == "stand-in driver stream: job job.py, params {'exit': '0'}\n"


def test_a_driver_runs_as_the_jobs_own_user(
    cluster: tuple[Daemons, Path],  # noqa: F811 (test_isolation's fixture)
) -> None:
    """Under the nodes' default isolation (as root), a job's driver runs as a user of its own,
    as a topology's code does, in its own folder."""
    daemons, _ = cluster
    daemons.start_master()
    daemons.start_worker("w1", {**STANDIN, "HW_TEST_UID": "1"})
    wait_for(lambda: [n for n in daemons.api("/api/v1/nodes") if n["online"]], 30, "online")
    code, body = _submit(daemons, "job.py", JOB, name="mine", param="exit=0")
    assert code == 201, body
    wait_for(lambda: _jobs(daemons)["mine"]["state"] == "succeeded", 60, "success")
    log = (daemons.tmp / "w1" / "spark" / "mine" / "driver.log").read_text().splitlines()
    assert log[0] == "stand-in driver mine: job job.py, params {'exit': '0'}"
    uid = int(log[1].removeprefix("uid "))
    assert FIRST_UID <= uid <= LAST_UID
    assert (daemons.tmp / "w1" / "spark" / "mine").stat().st_uid == uid
