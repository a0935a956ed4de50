"""A Spark job submitted with ``registers`` gets a token of its own (role ``job``): it may
register versions of the models it declared and read them back, and nothing else; it is
revoked with the job, minted anew (the old one revoked) when the master starts again,
kept as a hash only and never in ``spark_jobs.json``; only an admin submits such a job.
On the worker's side, the token reaches the driver on its standard input only."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest
from aiohttp.test_utils import TestClient, TestServer

from headwater._registry_client import Registry
from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.cloud.spark._driver_config import parse, read_registry
from headwater.common._exceptions import HeadwaterError
from headwater.common.node._spark_jobs import registry_input
from headwater.common.runtime._procs import spawn
from headwater.common.wire.proto import runtime_pb2 as pb

from .._artifacts import artifact

JOB = b"def run(spark, ctx):\n    ctx.count(read=1)\n"
MODEL = "energy-next-kwh"
Body = Callable[[TestClient[Any, Any], Master, dict[str, str]], Awaitable[None]]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _run(tmp_path: Path, body: Body) -> None:
    async def scenario() -> None:
        master = Master(tmp_path / "state")
        tokens = {
            "admin": (tmp_path / "state" / "admin.token").read_text().strip(),
            "operator": master.tokens.create("operator"),
        }
        client = TestClient(TestServer(make_app(master)))
        await client.start_server()
        try:
            await body(client, master, tokens)
        finally:
            await client.close()

    asyncio.run(scenario())


def _submit_path(name: str, *registers: str) -> str:
    query = [("file", "job.py"), ("name", name)] + [("registers", r) for r in registers]
    return f"/api/v1/spark/jobs?{urlencode(query)}"


async def _status(resp: Any) -> tuple[int, Any]:
    return resp.status, await resp.json()


def test_a_job_token_registers_its_models_and_nothing_else(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        admin = _bearer(tokens["admin"])
        resp = await client.post(_submit_path("trainer", MODEL, MODEL), data=JOB, headers=admin)
        code, view = await _status(resp)
        assert (code, view["registers"]) == (201, [MODEL]), view
        token = master.spark_jobs.tokens.text("trainer")
        (record,) = [r for r in master.tokens.records() if r.role == "job"]
        assert (record.scope, record.description) == ([MODEL], "Spark job trainer")
        assert token.startswith(f"{record.id}.")
        # kept as a hash: neither the job record nor the token store holds its text
        secret = token.partition(".")[2]
        assert secret not in (tmp_path / "state" / "tokens.json").read_text()
        assert record.id not in (tmp_path / "state" / "spark_jobs.json").read_text()
        job = _bearer(token)
        # it registers its model and reads that version back
        meta = urlencode({"meta": json.dumps({"by": "trainer"})})
        resp = await client.post(
            f"/api/v1/models/{MODEL}/versions?{meta}", data=artifact(name=MODEL), headers=job
        )
        code, made = await _status(resp)
        assert (code, made["version"]) == (201, 1), made
        code, got = await _status(await client.get(f"/api/v1/models/{MODEL}/1", headers=job))
        assert (code, got["name"], got["version"], got["metadata"]) == (
            200,
            MODEL,
            1,
            {"by": "trainer"},
        ), got
        # another model: refused, saying what it may do
        resp = await client.post(
            "/api/v1/models/other/versions", data=artifact(name="other"), headers=job
        )
        code, said = await _status(resp)
        assert (code, said["error"]) == (
            403,
            "a job's token (Spark job trainer) registers versions of its models only "
            f"({MODEL}): model 'other' was not declared at submit",
        )
        # every other route: 403
        others = [
            ("GET", "/api/v1/models"),
            ("GET", f"/api/v1/models/{MODEL}"),
            ("POST", f"/api/v1/models/{MODEL}"),
            ("POST", f"/api/v1/models/{MODEL}/rollouts"),
            ("POST", f"/api/v1/models/{MODEL}/rollback"),
            ("GET", "/api/v1/spark/jobs"),
            ("GET", "/api/v1/spark/jobs/trainer"),
            ("GET", "/api/v1/spark/jobs/trainer/logs"),
            ("POST", _submit_path("again", MODEL)),
            ("DELETE", "/api/v1/spark/jobs/trainer"),
            ("GET", "/api/v1/topologies"),
            ("GET", "/api/v1/nodes"),
            ("GET", "/api/v1/tokens"),
            ("POST", "/api/v1/tokens"),
            ("GET", "/api/v1/whoami"),
            ("GET", "/metrics"),
            ("GET", "/api/v1/nosuch"),
        ]
        for method, path in others:
            resp = await client.request(method, path, data=b"x", headers=job)
            code, said = await _status(resp)
            assert code == 403, (method, path, said)
            assert said["error"].startswith("a job's token (Spark job trainer) registers"), said
        assert "trainer" in master.spark_jobs.jobs  # nothing was killed
        # killed: the token is revoked with it
        resp = await client.delete("/api/v1/spark/jobs/trainer", headers=admin)
        assert resp.status == 200
        assert [r for r in master.tokens.records() if r.role == "job"] == []
        resp = await client.post(
            f"/api/v1/models/{MODEL}/versions", data=artifact(name=MODEL), headers=job
        )
        code, said = await _status(resp)
        assert (code, said["error"]) == (401, "unknown or revoked token")

    _run(tmp_path, body)


def test_only_an_admin_submits_a_registering_job_with_good_names(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        resp = await client.post(
            _submit_path("trainer", MODEL), data=JOB, headers=_bearer(tokens["operator"])
        )
        code, said = await _status(resp)
        assert (code, said["error"]) == (
            403,
            "POST /api/v1/spark/jobs needs the admin role; this token is an operator",
        )
        admin = _bearer(tokens["admin"])
        resp = await client.post(_submit_path("trainer", "../x"), data=JOB, headers=admin)
        code, said = await _status(resp)
        assert (code, said["error"]) == (
            400,
            "registers: '../x' is not a model name: use 1 to 64 letters, digits, '.', '_' or "
            "'-', and not '.' or '..' alone",
        )
        many = [f"m{i}" for i in range(17)]
        resp = await client.post(_submit_path("trainer", *many), data=JOB, headers=admin)
        code, said = await _status(resp)
        assert (code, said["error"]) == (400, "a job registers at most 16 models; it names 17")
        assert master.spark_jobs.jobs == {}
        assert [r for r in master.tokens.records() if r.role == "job"] == []
        # a job that registers nothing gets no token
        resp = await client.post(_submit_path("plain"), data=JOB, headers=admin)
        code, view = await _status(resp)
        assert (code, view["registers"]) == (201, [])
        assert master.spark_jobs.tokens.text("plain") == ""
        # nor can a job token be made by hand
        resp = await client.post("/api/v1/tokens", json={"role": "job"}, headers=admin)
        code, said = await _status(resp)
        assert code == 400 and said["error"].startswith("no role 'job': one of viewer"), said

    _run(tmp_path, body)


def test_a_master_started_again_mints_the_job_a_new_token(tmp_path: Path) -> None:
    async def submit() -> tuple[Master, str]:
        master = Master(tmp_path / "state")
        await master.spark_jobs.submit(JOB, "job.py", name="trainer", registers=[MODEL])
        return master, master.spark_jobs.tokens.text("trainer")

    _first, old = asyncio.run(submit())
    again = Master(tmp_path / "state")
    new = again.spark_jobs.tokens.text("trainer")
    assert new and new != old
    assert again.tokens.check(old) is None
    found = again.tokens.check(new)
    assert found is not None and (found.role, found.scope) == ("job", [MODEL])
    assert [r.role for r in again.tokens.records()].count("job") == 1
    # the order the worker gets carries it, with the API's URL
    again.http_url = "http://127.0.0.1:8080"
    order = again.spark_jobs.jobs["trainer"].order(again.http_url, new)
    assert (list(order.run.job.registers), order.run.job.registry_url) == (
        [MODEL],
        "http://127.0.0.1:8080",
    )
    assert order.run.job.registry_token == new
    plain = again.spark_jobs.jobs["trainer"].order(again.http_url, "")
    assert (list(plain.run.job.registers), plain.run.job.registry_url) == ([], "")
    nowhere = again.spark_jobs.jobs["trainer"].order("", new)  # no API listening yet
    assert (list(nowhere.run.job.registers), nowhere.run.job.registry_token) == ([], "")


def test_the_worker_hands_the_token_on_stdin_only(tmp_path: Path) -> None:
    job = pb.SparkJob(
        mode="once", registers=[MODEL], registry_url="http://m:1/", registry_token="abc.def"
    )
    line = registry_input(job)
    assert line is not None and line.endswith(b"\n")
    registry = read_registry(line.decode())
    assert registry == Registry("http://m:1", "abc.def", models=(MODEL,))
    assert "abc.def" not in repr(registry)
    assert registry_input(pb.SparkJob(mode="once")) is None
    # the driver's command line carries the flag, never the token
    cfg = parse(["--job", "j.py", "--name", "n", "--registry-stdin", *_folders()])
    assert (cfg.registry_stdin, cfg.registry) == (True, None)
    # spawn writes the line on the child's stdin, then its end
    log = tmp_path / "child.log"
    proc = spawn(
        ["-c", "import sys; print(sys.stdin.read()[::-1], end='')"],
        stdin=line,
        log_path=str(log),
    )
    assert proc.wait(30) == 0
    assert log.read_text()[::-1] == line.decode()
    for bad in ("", "{}", '{"url": "", "token": "t", "models": []}', "[1]"):
        with pytest.raises(HeadwaterError, match="the standard input holds no registry"):
            read_registry(bad)
    # a job's registry refuses an undeclared name before sending anything
    with pytest.raises(HeadwaterError, match=f"this job may register models {MODEL} only"):
        registry.register(b"x", "other")


def _folders() -> list[str]:
    return [f"--{f}=/x" for f in ("landing", "warehouse", "checkpoint", "workdir")]


def test_the_driver_refuses_a_stdin_without_a_registry(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "headwater.cloud.spark.driver", "--job", "j.py", "--name", "n"]
        + [f"--{f}={tmp_path}" for f in ("landing", "warehouse", "checkpoint", "workdir")]
        + ["--registry-stdin"],
        input="not json\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (done.returncode, done.stderr) == (
        2,
        "--registry-stdin: the standard input holds no registry (one JSON line with url, "
        "token and models, as a worker writes it)\n",
    )
