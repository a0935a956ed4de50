"""Attacks on the master's Spark job routes (``_spark_http.py``, ``_spark_jobs.py``), in
process: hostile names, parameters, folders, specs and packages, and tokens of too small a
role. Every one is a 4xx with one line saying why, and nothing is kept."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp.test_utils import TestClient

from headwater.cloud.master._master import Master

from ._packages import topology_package
from .test_master_http import _run

JOB = b"def run(spark, ctx):\n    pass\n"
SPEC = (
    b'dataset = "d"\ntime = "ts"\n[grains]\nhourly = "1 hour"\n[groups]\nsite = ["site"]\n'
    b'[measures]\nn = "count"\n'
)


def _query(file: str, **query: Any) -> str:
    pairs = [("file", file)] + [
        (k, v) for k, vs in query.items() for v in (vs if isinstance(vs, list) else [vs])
    ]
    return f"/api/v1/spark/jobs?{urlencode(pairs)}"


async def _said(resp: Any) -> tuple[int, str]:
    assert resp.content_type == "application/json", await resp.text()
    return resp.status, (await resp.json()).get("error", "")


def _zip(entries: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return out.getvalue()


def test_hostile_submissions_are_4xx_with_one_line(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        cases: list[tuple[str, bytes, dict[str, Any], int, str]] = [
            ("job.py", JOB, {"name": "tls"}, 400, "'tls' is not a Spark job name: nodes keep"),
            ("job.py", JOB, {"name": "spark"}, 400, "'spark' is not a Spark job name"),
            ("job.py", JOB, {"name": "landing"}, 400, "'landing' is not a Spark job name"),
            ("job.py", JOB, {"name": "x" * 65}, 400, f"'{'x' * 65}' is not a Spark job name"),
            ("job.py", JOB, {"name": "jöb"}, 400, "'jöb' is not a Spark job name"),
            ("../job.py", JOB, {}, 400, "'../job.py'"),
            ("job.py", JOB, {"mode": "every", "every_s": "nan"}, 400, "every_s must be"),
            ("job.py", JOB, {"mode": "every", "every_s": "inf"}, 400, "every_s must be"),
            ("job.py", JOB, {"landing": "/a\0b"}, 400, "folder '/a\\x00b': an absolute path"),
            ("job.py", JOB, {"param": "a\nb=1"}, 400, "parameter 'a\\nb': a name of letters"),
            ("job.py", JOB, {"param": "=v"}, 400, "param '=v': give KEY=VALUE"),
            ("job.py", b"\xff\xfe\x00", {}, 400, "job.py does not import: SyntaxError"),
            ("job.py", b"import os\nos._exit(0)\n", {}, 400, "job.py ended the process"),
            ("s.toml", b"x = " + b"[" * 5000 + b"]" * 5000, {}, 400, "s.toml is not a TOML"),
            ("s.toml", SPEC.replace(b'"count"', b'"quantile(v, 1.2.3)"'), {}, 400, "s.toml:"),
            (
                "p.zip",
                _zip({"../job.py": JOB}),
                {"entry": "job.py"},
                400,
                "the package's entry '../job.py'",
            ),
            ("p.zip", _zip({"job.py": JOB}), {"entry": "../job.py"}, 400, "'../job.py'"),
            ("p.zip", _zip({"job.py": JOB}), {"entry": "other.py"}, 400, "the package has no"),
        ]
        for file, data, query, status, reason in cases:
            said = await _said(await client.post(_query(file, **query), data=data))
            assert said[0] == status and said[1].startswith(reason), (file, query, said)
            assert "\n" not in said[1] and "Traceback" not in said[1]
        assert master.spark_jobs.jobs == {}
        assert list((state / "spark" / "packages").iterdir()) == []

    _run(tmp_path, body)


def test_a_spark_job_and_a_topology_never_share_a_name(tmp_path: Path) -> None:
    """A Spark job runs on a worker as its name's user, in its name's control groups: the
    ones of the topology of that name, were there one."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        topo = topology_package(tmp_path, "flow")
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=topo)
        assert resp.status == 201, await resp.text()
        said = await _said(await client.post(_query("job.py", name="flow"), data=JOB))
        assert said == (
            400,
            "a topology is named 'flow': a Spark job takes a name no topology has",
        )
        resp = await client.post(_query("job.py", name="other"), data=JOB)
        assert resp.status == 201, await resp.text()
        other = topology_package(tmp_path, "other")
        said = await _said(await client.post("/api/v1/topologies?entry=topo.py", data=other))
        assert said == (
            400,
            "a Spark job is named 'other': a topology takes a name no Spark job has",
        )

    _run(tmp_path, body)


def test_roles_hold_on_spark_jobs(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post(_query("job.py"), data=JOB)
        assert resp.status == 201, await resp.text()
        viewer, operator = master.tokens.create("viewer"), master.tokens.create("operator")
        for token in (viewer, operator):
            auth = {"Authorization": f"Bearer {token}"}
            for method, path in (
                ("POST", _query("job2.py")),
                ("DELETE", "/api/v1/spark/jobs/job"),
            ):
                resp = await client.request(method, path, data=JOB, headers=auth)
                status, error = await _said(resp)
                assert status == 403 and "needs the admin role" in error, (token, path)
        auth = {"Authorization": f"Bearer {viewer}"}
        status, error = await _said(await client.get("/api/v1/spark/jobs/job/logs", headers=auth))
        assert status == 403 and "needs the operator role" in error
        auth = {"Authorization": f"Bearer {operator}"}
        status, error = await _said(await client.get("/api/v1/spark/jobs/job/logs", headers=auth))
        assert (status, error) == (409, "Spark job 'job' runs on no worker yet: no log to read now")
        for method in ("GET", "POST", "DELETE"):
            resp = await client.request(
                method, "/api/v1/spark/jobs/job", headers={"Authorization": ""}
            )
            assert resp.status == 401, method
        assert set(master.spark_jobs.jobs) == {"job"}

    _run(tmp_path, body)
