"""The REST API asks who is calling: bearer tokens with roles, on every route.

Each finding of the review as a test, against the real app (``make_app``) through
aiohttp's test client: a request without a token, or with a bad, expired or
revoked one, is a 401 that says why; a viewer cannot submit, edit, kill or
deactivate (403); an operator can deactivate and edit but not submit; an admin
can do everything; every route either app registers is in the access table.
Then a real ``headwater master`` process: its REST API is on loopback by
default, its first admin token is in ``STATE/admin.token`` (0600, never in the
log), the CLI sends tokens and says what to do when refused, ``--insecure``
warns, and ``--http-cert``/``--http-key`` serve it over TLS.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud._access import ACCESS, PUBLIC
from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.common.security import JoinToken

from .._ports import free_port
from .._wait import wait_for
from ._packages import topology_source
from .test_master_http import _package

Call = Callable[[TestClient[Any, Any], Master, dict[str, str]], Awaitable[None]]


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _run(tmp_path: Path, body: Call) -> None:
    """``body(client, master, tokens)``: a client sending no token by default, and a token
    of each API role (``tokens["admin"]`` is the one the master made at its first start)."""

    async def scenario() -> None:
        master = Master(tmp_path / "state")
        tokens = {
            "admin": (tmp_path / "state" / "admin.token").read_text().strip(),
            "operator": master.tokens.create("operator"),
            "viewer": master.tokens.create("viewer"),
        }
        client = TestClient(TestServer(make_app(master)))
        await client.start_server()
        try:
            await body(client, master, tokens)
        finally:
            for task in master._coordinators.values():
                task.cancel()
            await client.close()

    asyncio.run(scenario())


async def _says(resp: Any, status: int, says: str) -> None:
    assert resp.status == status, await resp.text()
    reason = (await resp.json())["error"]
    assert says in reason, reason


def _routes(app: web.Application) -> set[tuple[str, str]]:
    """(method, route) of every route ``app`` registers (HEAD goes with its GET)."""
    return {
        (r.method, r.resource.canonical)
        for r in app.router.routes()
        if r.method != "HEAD" and r.resource is not None
    }


def test_every_route_of_both_apps_is_in_the_access_table(tmp_path: Path) -> None:
    """Deny by default is only safe if no route is forgotten: each one has a rule."""
    from headwater.cloud.tmaster._http import add_metrics_route, add_topology_routes
    from headwater.common._prometheus import Exposition

    master_routes = _routes(make_app(Master(tmp_path / "state")))
    tmaster = web.Application()  # what make_app adds, without a topology master
    add_topology_routes(tmaster, lambda name: None, lambda: [])
    add_metrics_route(tmaster, Exposition())
    missing = (master_routes | _routes(tmaster)) - set(ACCESS)
    assert not missing, f"routes without an access rule: {sorted(missing)}"
    assert set(ACCESS) == master_routes  # and no rule for a route that is gone
    assert {r for r, role in ACCESS.items() if role == PUBLIC} == {
        ("GET", "/api/v1/openapi.json"),
        ("GET", "/"),  # the web console's page and files: its data needs a token
        ("GET", "/console/{file}"),
    }


def test_a_route_without_a_rule_is_refused(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        async def secret(request: web.Request) -> web.Response:
            return web.json_response({"leaked": True})

        app = make_app(master)
        app.router.add_get("/api/v1/unlisted", secret)
        other = TestClient(TestServer(app))
        await other.start_server()
        try:
            resp = await other.get("/api/v1/unlisted", headers=_bearer(tokens["admin"]))
            await _says(resp, 403, "has no access rule")
        finally:
            await other.close()

    _run(tmp_path, body)


def test_without_a_token_submit_kill_edit_and_reads_are_401(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        data = _package(tmp_path)
        refused = [
            await client.post("/api/v1/topologies?entry=topo.py", data=data),
            await client.delete("/api/v1/topologies/ok"),
            await client.post("/api/v1/topologies/ok/revisions?action=replace&base=1", data=data),
            await client.post("/api/v1/topologies/ok/deactivate"),
            await client.get("/api/v1/nodes"),
            await client.get("/api/v1/tokens"),
            await client.get("/api/v1/no-such-route"),  # a stranger learns nothing
        ]
        for resp in refused:
            await _says(resp, 401, "no token")
            assert resp.headers["WWW-Authenticate"].startswith("Bearer")
        packages = tmp_path / "state" / "packages"
        assert master.deployments == {} and not (packages.exists() and any(packages.iterdir()))
        await _says(
            await client.get("/api/v1/nodes", headers={"Authorization": "Basic eDp5"}),
            401,
            "not 'Bearer TOKEN'",
        )
        for bad in ("nonsense", "0123456789ab.not-the-secret-at-all-xxxx"):
            resp = await client.get("/api/v1/nodes", headers=_bearer(bad))
            await _says(resp, 401, "unknown or revoked token")
        # the document needs no token
        assert (await client.get("/api/v1/openapi.json")).status == 200

    _run(tmp_path, body)


def test_a_viewer_reads_but_cannot_submit_edit_kill_or_deactivate(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        admin, viewer = _bearer(tokens["admin"]), _bearer(tokens["viewer"])
        data = _package(tmp_path)
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=data, headers=admin)
        assert resp.status == 201, await resp.text()
        for path in ("/api/v1/topologies", "/api/v1/topologies/ok", "/api/v1/nodes"):
            assert (await client.get(path, headers=viewer)).status == 200
        await _says(
            await client.post("/api/v1/topologies?entry=topo.py", data=data, headers=viewer),
            403,
            "POST /api/v1/topologies needs the admin role; this token is a viewer",
        )
        await _says(
            await client.delete("/api/v1/topologies/ok", headers=viewer), 403, "needs the admin"
        )
        await _says(
            await client.post(
                "/api/v1/topologies/ok/revisions?action=replace&base=1", data=data, headers=viewer
            ),
            403,
            "needs the operator role; this token is a viewer",
        )
        await _says(
            await client.post("/api/v1/topologies/ok/deactivate", headers=viewer),
            403,
            "needs the operator role",
        )
        await _says(await client.get("/api/v1/tokens", headers=viewer), 403, "admin role")
        assert list(master.tms) == ["ok"] and master.tms["ok"].state == "RUNNING"
        assert (await client.get("/api/v1/no-such-route", headers=viewer)).status == 404

    _run(tmp_path, body)


def test_an_operator_deactivates_and_edits_but_cannot_submit_or_kill(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        admin, operator = _bearer(tokens["admin"]), _bearer(tokens["operator"])
        data = _package(tmp_path)
        await _says(
            await client.post("/api/v1/topologies?entry=topo.py", data=data, headers=operator),
            403,
            "needs the admin role; this token is an operator",
        )
        assert master.deployments == {}
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=data, headers=admin)
        assert resp.status == 201, await resp.text()
        resp = await client.post("/api/v1/topologies/ok/deactivate", headers=operator)
        assert resp.status == 200 and (await resp.json())["state"] == "PAUSED"
        resp = await client.post("/api/v1/topologies/ok/activate", headers=operator)
        assert resp.status == 200 and (await resp.json())["state"] == "RUNNING"
        # an edit gets past the access check (a stale base is the edit's own refusal)
        resp = await client.post(
            "/api/v1/topologies/ok/revisions?action=replace&base=99", data=data, headers=operator
        )
        assert resp.status == 409, await resp.text()
        await _says(
            await client.delete("/api/v1/topologies/ok", headers=operator), 403, "admin role"
        )
        assert list(master.tms) == ["ok"]
        resp = await client.delete("/api/v1/topologies/ok", headers=admin)
        assert resp.status == 200 and master.tms == {}

    _run(tmp_path, body)


def test_expired_and_revoked_tokens_are_refused(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        admin = _bearer(tokens["admin"])
        brief = master.tokens.create("admin", ttl_s=0.001)
        record = next(r for r in master.tokens.records() if brief.startswith(r.id))
        wait_for(lambda: record.expired(time.time()), 5, "the token to expire")
        await _says(
            await client.get("/api/v1/nodes", headers=_bearer(brief)),
            401,
            f"token {record.id} expired at ",
        )
        viewer_id = tokens["viewer"].partition(".")[0]
        assert (await client.get("/api/v1/nodes", headers=_bearer(tokens["viewer"]))).status == 200
        resp = await client.delete(f"/api/v1/tokens/{viewer_id}", headers=admin)
        assert resp.status == 200 and (await resp.json()) == {"revoked": viewer_id}
        await _says(
            await client.get("/api/v1/nodes", headers=_bearer(tokens["viewer"])),
            401,
            "unknown or revoked token",
        )
        await _says(
            await client.delete(f"/api/v1/tokens/{viewer_id}", headers=admin), 404, "no token"
        )

    _run(tmp_path, body)


def test_tokens_are_made_listed_without_secrets_and_join_tokens_need_tls(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, tokens: dict[str, str]) -> None:
        admin = _bearer(tokens["admin"])
        resp = await client.post(
            "/api/v1/tokens",
            json={"role": "viewer", "ttl": "1h", "description": "ci"},
            headers=admin,
        )
        assert resp.status == 201, await resp.text()
        made = await resp.json()
        assert made["role"] == "viewer" and made["token"].startswith(made["id"] + ".")
        assert 3500 < made["expires"] - time.time() <= 3600
        assert (await client.get("/api/v1/nodes", headers=_bearer(made["token"]))).status == 200
        listed = await (await client.get("/api/v1/tokens", headers=admin)).json()
        assert [t["role"] for t in listed] == ["admin", "operator", "viewer", "viewer"]
        assert all(set(t) == {"id", "role", "created", "expires", "description"} for t in listed)
        assert not any(tok.partition(".")[2] in json.dumps(listed) for tok in tokens.values())

        for bad, says in (
            ({"role": "root"}, "no role 'root'"),
            ({"role": "viewer", "ttl": "soon"}, "a lifetime is"),
            ({"role": "viewer", "ttl": 5}, "ttl is a string"),
            (["viewer"], "a JSON object"),
        ):
            await _says(await client.post("/api/v1/tokens", json=bad, headers=admin), 400, says)
        await _says(await client.post("/api/v1/tokens", data=b"{", headers=admin), 400, "send JSON")
        # an insecure master (no enrolment port): nodes need no token
        await _says(
            await client.post("/api/v1/tokens", json={"role": "agent"}, headers=admin),
            409,
            "without TLS",
        )
        master.join_port, master.ca_fingerprint = 7443, "sha256:" + "ab" * 32
        resp = await client.post("/api/v1/tokens", json={"role": "agent"}, headers=admin)
        assert resp.status == 201, await resp.text()
        join = JoinToken.parse((await resp.json())["token"])
        assert join.port == 7443 and join.ca_fingerprint == master.ca_fingerprint
        assert master.tokens.check(join.token) is not None
        # a join token enrols a node; it is no key to the API
        await _says(
            await client.get("/api/v1/nodes", headers=_bearer(join.token)), 403, "join token"
        )

    _run(tmp_path, body)


# -- a real master process ----------------------------------------------------------------
def _master(tmp: Path, *extra: str) -> tuple[subprocess.Popen[bytes], dict[str, Any]]:
    ready = tmp / "master.json"
    with open(tmp / "master.log", "ab") as out:  # the process keeps its own copy
        proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "headwater", "master", "--no-advertise"),
                *("--port", str(free_port()), "--http-port", str(free_port())),
                *("--join-port", str(free_port())),  # not the default: tests run side by side
                *("--state-dir", str(tmp / "state"), "--ready-file", str(ready), *extra),
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    info = wait_for(lambda: ready.exists() and json.loads(ready.read_text()), 30, "the master")
    return proc, info


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "headwater", *args],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, **(env or {})},
    )


@pytest.fixture
def master(tmp_path: Path) -> Iterator[dict[str, Any]]:
    proc, info = _master(tmp_path)
    try:
        yield {**info, "proc": proc, "state": tmp_path / "state", "log": tmp_path / "master.log"}
    finally:
        proc.terminate()
        proc.wait(20)


def test_the_master_binds_rest_to_loopback_and_keeps_its_admin_token_private(
    master: dict[str, Any],
) -> None:
    http_port = int(master["http"].rsplit(":", 1)[1])
    assert master["http"].startswith("http://127.0.0.1:")
    listening = [
        c.laddr
        for c in psutil.Process(master["proc"].pid).net_connections("tcp")
        if c.status == psutil.CONN_LISTEN and c.laddr.port == http_port
    ]
    assert listening and all(addr.ip == "127.0.0.1" for addr in listening)
    admin = master["state"] / "admin.token"
    assert stat.S_IMODE(admin.stat().st_mode) == 0o600
    token = admin.read_text().strip()
    log = master["log"].read_text()
    assert str(admin) in log and token not in log and token.partition(".")[2] not in log


def test_the_cli_sends_the_token_and_says_what_to_do_without_one(
    master: dict[str, Any], tmp_path: Path
) -> None:
    url, admin_file = master["http"], master["state"] / "admin.token"
    refused = _cli("nodes", "--master", url)
    assert refused.returncode == 2, refused
    assert "no token" in refused.stderr and "admin.token" in refused.stderr
    assert "HEADWATER_TOKEN" in refused.stderr and "Traceback" not in refused.stderr
    bad = _cli("nodes", "--master", url, "--token", "0123456789ab.wrong-wrong-wrong-wrong")
    assert bad.returncode == 2 and "unknown or revoked token" in bad.stderr, bad

    made = _cli(
        *("token", "create", "--role", "viewer", "--ttl", "1h", "--description", "dashboards"),
        *("--master", url, "--token-file", str(admin_file)),
    )
    assert made.returncode == 0, made
    viewer = made.stdout.splitlines()[0]
    assert made.stdout.strip() == viewer and "role viewer" in made.stderr
    listed = _cli("token", "list", "--master", url, env={"HEADWATER_TOKEN": admin_file.read_text()})
    assert listed.returncode == 0 and "dashboards" in listed.stdout, listed
    assert viewer.partition(".")[2] not in listed.stdout

    assert _cli("nodes", "--master", url, env={"HEADWATER_TOKEN": viewer}).returncode == 0
    killed = _cli("kill", "ghost", "--master", url, "--token", viewer)
    assert killed.returncode == 2 and "needs the admin role; this token is a viewer" in (
        killed.stderr
    ), killed
    assert "headwater token create --role" in killed.stderr and "Traceback" not in killed.stderr
    (tmp_path / "topo.py").write_text(topology_source("ok"))
    submit = _cli("submit", str(tmp_path / "topo.py"), "--master", url, "--token", viewer)
    assert submit.returncode == 2 and "needs the admin role" in submit.stderr, submit
    # --token beats HEADWATER_TOKEN, which beats --token-file
    env = {"HEADWATER_TOKEN": viewer}
    assert (
        _cli("token", "list", "--master", url, "--token-file", str(admin_file), env=env).returncode
        == 2
    )
    admin = admin_file.read_text().strip()
    assert _cli("token", "list", "--master", url, "--token", admin, env=env).returncode == 0

    viewer_id = viewer.partition(".")[0]
    revoked = _cli("token", "revoke", viewer_id, "--master", url, "--token", admin)
    assert revoked.returncode == 0 and f"revoked token {viewer_id}" in revoked.stdout
    gone = _cli("nodes", "--master", url, "--token", viewer)
    assert gone.returncode == 2 and "unknown or revoked token" in gone.stderr


def test_insecure_master_asks_no_token_and_says_so_loudly(tmp_path: Path) -> None:
    proc, info = _master(tmp_path, "--insecure")
    try:
        nodes = _cli("nodes", "--master", info["http"], "--json")
        assert nodes.returncode == 0 and json.loads(nodes.stdout) == [], nodes
    finally:
        proc.terminate()
        proc.wait(20)
    log = (tmp_path / "master.log").read_text()
    assert "headwater master: WARNING: INSECURE" in log  # the line on stderr
    assert "anyone who reaches this master can run code" in log


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp / "rest.crt", tmp / "rest.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_file, key_file


def test_rest_over_tls_with_the_cacert(tmp_path: Path) -> None:
    cert, key = _self_signed(tmp_path)
    half = _cli("master", "--http-cert", str(cert), "--state-dir", str(tmp_path / "x"))
    assert half.returncode == 2 and "--http-cert and --http-key go together" in half.stderr
    wrong = _cli(
        *("master", "--http-cert", str(key), "--http-key", str(key)),
        *("--state-dir", str(tmp_path / "x")),
    )
    assert wrong.returncode == 2 and "not a PEM certificate" in wrong.stderr, wrong
    assert "Traceback" not in half.stderr + wrong.stderr

    proc, info = _master(tmp_path, "--http-cert", str(cert), "--http-key", str(key))
    try:
        assert info["http"].startswith("https://127.0.0.1:")
        token = (tmp_path / "state" / "admin.token").read_text().strip()
        ok = _cli("nodes", "--master", info["http"], "--token", token, "--cacert", str(cert))
        assert ok.returncode == 0, ok
        env = {"HEADWATER_CACERT": str(cert), "HEADWATER_TOKEN": token}
        assert _cli("nodes", "--master", info["http"], env=env).returncode == 0
        untrusted = _cli("nodes", "--master", info["http"], "--token", token)
        assert untrusted.returncode == 2 and "--cacert" in untrusted.stderr, untrusted
    finally:
        proc.terminate()
        proc.wait(20)


def test_status_says_what_runs_on_a_master(master: dict[str, Any]) -> None:
    """With nothing running, or a topology that is not there (killed): what to do, not an
    HTTP error."""
    url, token = master["http"], (master["state"] / "admin.token").read_text().strip()
    none = _cli("status", "--master", url, "--token", token)
    assert (none.returncode, none.stdout) == (2, ""), none
    assert none.stderr == (
        f"headwater: error: no topology runs on {url}; submit one with `headwater submit FILE`\n"
    )
    ghost = _cli("status", "ghost", "--master", url, "--token", token)
    assert ghost.returncode == 2, ghost
    assert ghost.stderr == (
        "headwater: error: no topology named 'ghost' (running: none); submit it first\n"
    )
