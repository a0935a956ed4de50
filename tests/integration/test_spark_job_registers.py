"""A Spark job submitted with ``--registers`` registers its model from a worker: a real
master and worker on loopback, the worker's driver the stand-in (``_standin_driver.py``,
through ``HEADWATER_SPARK_DRIVER``), which reads its registry from its standard input as
the real driver does and registers through it. The version is in the registry with its
metadata; the job's token could not list the jobs, is nowhere on disk in plaintext nor in
the worker's environment, and goes with the job; an operator cannot submit such a job.
Then the same through the real driver, Spark started: ``ctx.register`` in the job."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from headwater.common.security import TokenStore

from .._artifacts import artifact
from ._daemons import Daemons
from ._support import wait_for
from .test_spark_jobs import JOB, STANDIN, _jobs

pytestmark = pytest.mark.cluster
MODEL = "energy-next-kwh"


def _cli(daemons: Daemons, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", *args, "--master", daemons.http, "--token", token],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_submitted_job_registers_its_model(daemons: Daemons, tmp_path: Path) -> None:
    daemons.start_master()
    worker = daemons.start_worker("w1", STANDIN)
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "the worker to attach")
    store = TokenStore(tmp_path / "master" / "tokens.json")
    job = tmp_path / "trainer.py"
    job.write_bytes(JOB)
    submit = ("spark", "submit", str(job), "--registers", MODEL, "--param", f"register={MODEL}")
    # an operator may not: submitting is an admin's
    done = _cli(daemons, store.create("operator"), *submit)
    assert (done.returncode, done.stderr) == (
        2,
        f"headwater: error: {daemons.http} refused the request: POST /api/v1/spark/jobs needs "
        "the admin role; this token is an operator; ask an admin for a token with that role: "
        "`headwater token create --role ROLE`\n",
    )
    assert [r for r in store.records() if r.role == "job"] == []
    done = _cli(daemons, daemons.token, *submit)
    assert (done.returncode, done.stdout) == (
        0,
        "submitted Spark job 'trainer' (once, on worker w1)\n"
        f"it may register versions of {MODEL}\n",
    ), done.stderr
    (record,) = [r for r in store.records() if r.role == "job"]
    assert (record.scope, record.description) == ([MODEL], "Spark job trainer")
    ended = wait_for(
        lambda: (j := _jobs(daemons)["trainer"])["state"] in ("succeeded", "failed") and j,
        60,
        "the job to end",
    )
    assert (ended["state"], ended["last_error"], ended["registers"]) == ("succeeded", "", [MODEL])
    version = daemons.api(f"/api/v1/models/{MODEL}/1")
    assert (version["name"], version["version"], version["metadata"]) == (
        MODEL,
        1,
        {"by": "trainer"},
    )
    log = (tmp_path / "w1" / "spark" / "trainer" / "driver.log").read_text().splitlines()
    assert log[1:] == [
        f"registry Registry({daemons.http!r})",
        f"registered {MODEL} version 1",
        f"listing refused: {daemons.http} refused the request: a job's token (Spark job "
        f"trainer) registers versions of its models only ({MODEL}): GET /api/v1/spark/jobs "
        "is refused",
    ]
    # the token (its id opens it) is in no job record, and not in the worker's environment
    assert record.id not in (tmp_path / "master" / "spark_jobs.json").read_text()
    environ = Path(f"/proc/{worker.pid}/environ").read_bytes()
    assert record.id.encode() not in environ
    # killed: its token goes with it
    done = _cli(daemons, daemons.token, "spark", "kill", "trainer")
    assert done.returncode == 0, done.stderr
    assert [r for r in store.records() if r.role == "job"] == []


REGISTERING_JOB = """
import json


def run(spark, ctx):
    model = json.loads(ctx.params["model"])
    record = ctx.register(json.dumps(model).encode(), "energy-next-kwh", meta={"rows": 3})
    print("registered", record["name"], "version", record["version"], flush=True)
    try:
        ctx.register(b"{}", "other")
    except Exception as exc:
        print("refused:", exc, flush=True)
"""


@pytest.mark.timeout(600)
def test_the_real_driver_registers_through_ctx_register(daemons: Daemons, tmp_path: Path) -> None:
    """The same through the real driver (``python -m headwater.cloud.spark.driver``, Spark
    started): ``ctx.register`` in a submitted job, as under ``spark run --master``."""
    daemons.start_master()
    warehouse = tmp_path / "warehouse"
    daemons.start_worker("w1", more=("--warehouse", str(warehouse)))
    wait_for(lambda: daemons.api("/api/v1/nodes"), 30, "the worker to attach")
    job = tmp_path / "trainer.py"
    job.write_text(REGISTERING_JOB)
    model = artifact(name=MODEL).decode()
    done = _cli(
        daemons,
        daemons.token,
        *("spark", "submit", str(job), "--registers", MODEL, "--param", f"model={model}"),
    )
    assert done.returncode == 0, done.stderr
    ended = wait_for(
        lambda: (j := _jobs(daemons)["trainer"])["state"] in ("succeeded", "failed") and j,
        400,
        "the job to end",
    )
    assert (ended["state"], ended["last_error"]) == ("succeeded", ""), ended
    version = daemons.api(f"/api/v1/models/{MODEL}/1")
    assert (version["version"], version["metadata"]) == (1, {"rows": 3})
    log = (tmp_path / "w1" / "spark" / "trainer" / "driver.log").read_text()
    assert f"registered {MODEL} version 1\n" in log
    assert (
        f"refused: this job may register models {MODEL} only (headwater spark submit "
        "--registers NAME declares them); not 'other'\n"
    ) in log
