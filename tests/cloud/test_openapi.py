"""The OpenAPI document is the API: it names every route and no other, and a real
master holds to it under schemathesis.

The document test is in-process. The schemathesis tests drive a real
``headwater master`` (no nodes) through the document it serves, a few examples
per operation: with an admin's token no answer is a 5xx; with a viewer's,
every operation that changes something is a 403 and the topologies and nodes
are as they were; with no token, everything but the document and the console's page and
files is a 401.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import hypothesis
import pytest
import schemathesis
from aiohttp import web

from headwater.cloud._access import ACCESS, PUBLIC, needed_role
from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.common._package import build_package

from .._ports import free_port
from .._wait import wait_for
from ._packages import topology_source

MUTATING = ("POST", "DELETE")
EXAMPLES = 6


def test_the_document_names_every_route_and_no_other(tmp_path: Path) -> None:
    app = make_app(Master(tmp_path / "state"))
    registered = {
        (r.method, r.resource.canonical)
        for r in app.router.routes()
        if r.method != "HEAD" and r.resource is not None
    }
    doc = json.loads(json.dumps(_document(app)))
    documented = {
        (method.upper(), path) for path, methods in doc["paths"].items() for method in methods
    }
    assert documented == registered
    assert doc["openapi"].startswith("3.")
    assert doc["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    assert doc["security"] == [{"bearer": []}]
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            role = ACCESS[(method.upper(), path)]
            assert op["x-role"] == role
            if role == PUBLIC:
                assert op["security"] == []
            else:
                assert {"401", "403"} <= set(op["responses"]), (method, path)


def _document(app: web.Application) -> Any:
    """What GET /api/v1/openapi.json answers, without a server."""
    from headwater import __version__
    from headwater.cloud.master._openapi import openapi

    assert ("GET", "/api/v1/openapi.json") in {
        (r.method, r.resource.canonical) for r in app.router.routes() if r.resource is not None
    }
    return openapi(__version__)


# -- schemathesis against a real master ---------------------------------------------------
@pytest.fixture
def master(tmp_path: Path) -> Iterator[dict[str, Any]]:
    ready = tmp_path / "master.json"
    with open(tmp_path / "master.log", "ab") as out:
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "headwater", "master", "--no-advertise"),
                *("--port", str(free_port()), "--http-port", str(free_port())),
                *("--join-port", str(free_port())),  # not the default: tests run side by side
                *("--state-dir", str(tmp_path / "state"), "--ready-file", str(ready)),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        info = wait_for(lambda: ready.exists() and json.loads(ready.read_text()), 30, "master")
        admin = (tmp_path / "state" / "admin.token").read_text().strip()
        base = info["http"]
        # a topology to aim at, so that the per-topology routes meet a real one too
        folder = tmp_path / "src"
        folder.mkdir()
        (folder / "topo.py").write_text(topology_source("ok"))
        data, entry = build_package(folder / "topo.py")
        _call(base, "POST", f"/api/v1/topologies?entry={entry}", admin, data)
        viewer = _call(base, "POST", "/api/v1/tokens", admin, json.dumps({"role": "viewer"}))
        yield {"url": base, "admin": admin, "viewer": viewer["token"]}
    finally:
        proc.terminate()
        proc.wait(20)


def _call(base: str, method: str, path: str, token: str, data: Any = None) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    if isinstance(data, str):
        data, headers["Content-Type"] = data.encode(), "application/json"
    req = urllib.request.Request(f"{base}{path}", data=data, method=method, headers=headers)
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def _exercise(
    base: str, authorization: str | None, check: Callable[[Any, Any], None]
) -> list[tuple[str, str, int]]:
    """Every operation of the served document, ``EXAMPLES`` generated cases each (and as
    many aimed at the topology 'ok'), sent with ``authorization`` (None: no header at all);
    ``check(case, response)`` each; what was sent and answered."""
    schema = schemathesis.openapi.from_url(f"{base}/api/v1/openapi.json")
    schema.config.max_stream_events = 2  # the console's event stream never ends by itself
    seen: list[tuple[str, str, int]] = []
    settings = hypothesis.settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[hypothesis.Phase.explicit, hypothesis.Phase.generate],
        suppress_health_check=list(hypothesis.HealthCheck),
    )
    for result in schema.get_all_operations():
        assert isinstance(result, schemathesis.core.result.Ok), result.err()
        op = result.ok()
        aims: list[dict[str, Any] | None] = [None]
        if "{name}" in op.path:
            aims.append({"name": "ok"})
        for aim in aims:

            @settings
            @hypothesis.given(case=op.as_strategy(path_parameters=aim))
            def one(case: Any) -> None:
                headers = {
                    k: v for k, v in (case.headers or {}).items() if k.lower() != "authorization"
                }
                case.headers = headers
                if authorization is not None:
                    headers["Authorization"] = authorization
                response = case.call(base_url=base, timeout=30)
                seen.append((case.method.upper(), case.formatted_path, response.status_code))
                check(case, response)

            one()
    return seen


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_no_operation_answers_a_5xx(master: dict[str, Any]) -> None:
    def check(case: Any, response: Any) -> None:
        assert response.status_code < 500, (case.method, case.formatted_path, response.text)

    seen = _exercise(master["url"], f"Bearer {master['admin']}", check)
    assert {m for m, _, _ in seen} == {"GET", "POST", "PUT", "DELETE"}
    assert any(status < 300 for _, _, status in seen)


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_a_viewer_changes_nothing(master: dict[str, Any]) -> None:
    base, viewer = master["url"], master["viewer"]
    before = (
        _call(base, "GET", "/api/v1/topologies", viewer),
        _call(base, "GET", "/api/v1/nodes", viewer),
        [t["id"] for t in _call(base, "GET", "/api/v1/tokens", master["admin"])],
    )

    def check(case: Any, response: Any) -> None:
        what = (case.method, case.formatted_path, response.text)
        assert response.status_code < 500, what
        # writes, tokens and logs (an operator's) are above a viewer
        above = needed_role(case.method.upper(), case.path) not in ("viewer", PUBLIC)
        if case.method.upper() in MUTATING or above:
            assert response.status_code == 403, what
        else:
            assert response.status_code in (200, 404), what

    seen = _exercise(base, f"Bearer {viewer}", check)
    assert any(m in MUTATING for m, _, _ in seen)
    after = (
        _call(base, "GET", "/api/v1/topologies", viewer),
        _call(base, "GET", "/api/v1/nodes", viewer),
        [t["id"] for t in _call(base, "GET", "/api/v1/tokens", master["admin"])],
    )
    assert [t["name"] for t in after[0]] == [t["name"] for t in before[0]] == ["ok"]
    assert [t["state"] for t in after[0]] == [t["state"] for t in before[0]]
    assert after[1] == before[1] and after[2] == before[2]


@pytest.mark.cluster
@pytest.mark.timeout(240)
def test_without_a_token_everything_but_the_document_is_401(master: dict[str, Any]) -> None:
    def check(case: Any, response: Any) -> None:
        what = (case.method, case.formatted_path, response.text)
        if needed_role(case.method.upper(), case.path) == PUBLIC:  # the document, the console
            assert response.status_code in (200, 404), what
        else:
            assert response.status_code == 401, what
            headers = {k.lower(): v for k, v in response.headers.items()}
            challenge = headers["www-authenticate"]  # a list of values, or one
            assert str(challenge[0] if isinstance(challenge, list) else challenge).startswith(
                "Bearer"
            ), what

    seen = _exercise(master["url"], None, check)
    assert len({(m, p) for m, p, _ in seen}) > len(ACCESS)
