"""The master's REST API treats a submission as untrusted input (issue 15, findings 4 and 6).

Each test drives the real app (``make_app``) through aiohttp's test client, with
a master whose state folder is the test's own and no node attached: names that
would climb out of a folder, entries outside the package, packages out of bounds
or not zips, and too many containers are each a 4xx with a JSON reason; a
refused package is not kept; nothing outside the state folder is touched.
"""

from __future__ import annotations

import asyncio
import io
import json
import zipfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import MAX_CONTAINERS, Master
from headwater.common._exceptions import HeadwaterError
from headwater.common._package import MAX_PACKAGE_FILES, MAX_UNPACKED_BYTES

from ._packages import topology_package

Call = Callable[[TestClient[Any, Any], Master, Path], Awaitable[None]]


def _package(tmp_path: Path, name: str = "ok", spout: str = "words") -> bytes:
    return topology_package(tmp_path, name, spout)


def _zip(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _run(tmp_path: Path, body: Call) -> None:
    async def scenario() -> None:
        master = Master(tmp_path / "state")
        admin = (tmp_path / "state" / "admin.token").read_text().strip()
        client = TestClient(
            TestServer(make_app(master)), headers={"Authorization": f"Bearer {admin}"}
        )
        await client.start_server()
        try:
            await body(client, master, tmp_path / "state")
        finally:
            for task in master._coordinators.values():
                task.cancel()
            await client.close()

    asyncio.run(scenario())


async def _refused(resp: Any, status: int, says: str) -> None:
    assert resp.status == status, await resp.text()
    assert resp.content_type == "application/json"
    reason = (await resp.json())["error"]
    assert says in reason, reason


async def _raw(client: TestClient[Any, Any], method: str, path: str) -> tuple[int, str]:
    """``method path`` as sent byte for byte (a client library would tidy '..' away)."""
    reader, writer = await asyncio.open_connection(client.host, client.port)
    auth = client.session.headers["Authorization"]
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: {auth}\r\n"
        "Connection: close\r\n\r\n".encode()
    )
    await writer.drain()
    answer = (await reader.read()).decode(errors="replace")
    writer.close()
    return int(answer.split()[1]), answer.split("\r\n\r\n", 1)[-1]


def _stored(state: Path) -> list[str]:
    return sorted(p.name for p in (state / "packages").iterdir())


def test_a_topology_named_dot_dot_is_refused_and_nothing_is_removed(tmp_path: Path) -> None:
    """Finding 4: a topology named '..' was accepted; killing it removed the state folder."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        (state / "keep").write_text("x")
        for name in ("..", "."):
            resp = await client.post(
                "/api/v1/topologies?entry=topo.py", data=_package(tmp_path, name)
            )
            await _refused(resp, 400, "is not a topology name")
        assert master.deployments == {}
        for method, path in (
            ("DELETE", "/api/v1/topologies/.."),
            ("DELETE", "/api/v1/topologies/%2E%2E"),
            ("POST", "/api/v1/topologies/../revisions?action=replace&base=1"),
        ):
            status, reason = await _raw(client, method, path)
            assert status in (400, 404), (path, status, reason)
        await _refused(await client.delete("/api/v1/topologies/a:b"), 400, "topology name")
        await _refused(
            await client.post("/api/v1/topologies/a:b/revisions?action=replace&base=1"),
            400,
            "topology name",
        )
        assert (state / "keep").read_text() == "x"
        assert _stored(state) == []  # finding 6: refused uploads are not kept

    _run(tmp_path, body)


def test_a_component_name_that_climbs_is_refused(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        resp = await client.post(
            "/api/v1/topologies?entry=topo.py", data=_package(tmp_path, "t", "../up")
        )
        await _refused(resp, 400, "is not a component name")
        assert master.deployments == {}

    _run(tmp_path, body)


def test_an_entry_outside_the_package_is_refused(tmp_path: Path) -> None:
    """Finding 6: ``entry=/etc/passwd`` was executed as Python."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        data = _package(tmp_path)
        for entry in ("/etc/passwd", "../state/deployments.json", "a/../../x.py"):
            resp = await client.post("/api/v1/topologies", params={"entry": entry}, data=data)
            await _refused(resp, 400, "is not a file inside the package")
        assert _stored(state) == []

    _run(tmp_path, body)


def test_a_zip_bomb_and_too_many_files_are_refused_before_extraction(tmp_path: Path) -> None:
    """Finding 6: a 204 KB zip unpacked to 201 MB on the master and was kept."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        bomb = _zip({"topo.py": b"x = 1\n", "big.bin": bytes(MAX_UNPACKED_BYTES + 1)})
        assert len(bomb) < 1 << 20
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=bomb)
        await _refused(resp, 413, "unpacks to")
        many = _zip({f"f{i}.py": b"" for i in range(MAX_PACKAGE_FILES + 1)})
        resp = await client.post("/api/v1/topologies?entry=f0.py", data=many)
        await _refused(resp, 413, "files; the limit is")
        assert _stored(state) == []
        assert not (state / "code").exists() or list((state / "code").iterdir()) == []

    _run(tmp_path, body)


def test_malformed_bodies_are_4xx_with_a_reason(tmp_path: Path) -> None:
    """Finding 6: empty, non-zip and broken bodies and odd entry names gave 500s."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        good = _package(tmp_path)
        cases: list[tuple[bytes, str]] = [
            (b"", "empty"),
            (b"not a zip at all", "not a readable zip"),
            (good[: len(good) // 2], "not a readable zip"),
            (_zip({"../evil.py": b"x = 1\n"}), "would land outside its folder"),
            (_zip({"/abs.py": b"x = 1\n"}), "would land outside its folder"),
        ]
        for data, says in cases:
            resp = await client.post("/api/v1/topologies?entry=topo.py", data=data)
            await _refused(resp, 400, says)
        corrupt = bytearray(_zip({"topo.py": b"topology = None\n" * 100}))
        corrupt[40:60] = bytes(20)  # the compressed bytes, not the directory
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=bytes(corrupt))
        assert 400 <= resp.status < 500, await resp.text()
        assert "error" in await resp.json()
        resp = await client.post("/api/v1/topologies?entry=nothere.py", data=good)
        await _refused(resp, 400, "has no file 'nothere.py'")
        resp = await client.post("/api/v1/topologies?entry=topo.py&containers=x", data=good)
        await _refused(resp, 400, "whole number")
        resp = await client.post("/api/v1/topologies", data=good)
        await _refused(resp, 400, "entry=FILE.py")
        await _refused(await client.delete("/api/v1/topologies/nope"), 404, "no topology")
        assert _stored(state) == []

    _run(tmp_path, body)


def test_containers_are_bounded(tmp_path: Path) -> None:
    """Finding 6: no cap on --containers."""

    async def body(client: TestClient[Any, Any], master: Master, state: Path) -> None:
        data = _package(tmp_path)
        for n in (0, -1, MAX_CONTAINERS + 1, 10**9):
            resp = await client.post(f"/api/v1/topologies?entry=topo.py&containers={n}", data=data)
            await _refused(resp, 400, f"from 1 to {MAX_CONTAINERS}")
        resp = await client.post("/api/v1/topologies?entry=topo.py&containers=2", data=data)
        assert resp.status == 201, await resp.text()
        assert (await resp.json())["topology"] == "ok"
        assert len(_stored(state)) == 1
        resp = await client.post("/api/v1/topologies?entry=topo.py", data=data)
        await _refused(resp, 400, "already running")
        assert len(_stored(state)) == 1  # the running topology's package stays
        resp = await client.delete("/api/v1/topologies/ok")
        assert resp.status == 200

    _run(tmp_path, body)


def test_a_kept_deployment_whose_name_climbs_is_not_resumed(tmp_path: Path) -> None:
    """Finding 4, the master's state folder: a name read back from disk is checked too."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "keep").write_text("x")
    kept = {"package": "sha256:" + "0" * 64, "entry": "topo.py", "containers": 1}
    (state / "deployments.json").write_text(json.dumps([{**kept, "name": "..", "assignment": {}}]))

    async def scenario() -> None:
        master = Master(state)
        await master.resume()
        assert master.deployments == {}
        with pytest.raises(HeadwaterError, match="is not a topology name"):
            master.kill("..")

    asyncio.run(scenario())
    assert (state / "keep").read_text() == "x"
