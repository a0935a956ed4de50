"""The console's routes on the master's real app, through aiohttp's test client.

The page and its files load without a token and carry the security headers;
``whoami`` says the token's role; the event stream sends snapshots, is bounded
per token (429), and ends when its token is revoked.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from aiohttp import ClientSession, web
from aiohttp.test_utils import TestClient, TestServer

from headwater.cloud.master._http import make_app
from headwater.cloud.master._master import Master
from headwater.common.console import _routes as routes
from headwater.common.console._routes import MAX_STREAMS_PER_TOKEN
from headwater.common.console._static import CSP

Body = Callable[[TestClient[Any, Any], Master], Awaitable[None]]


def _run(tmp_path: Path, body: Body, insecure: bool = False) -> None:
    async def scenario() -> None:
        master = Master(tmp_path / "state")
        client = TestClient(TestServer(make_app(master, insecure=insecure)))
        await client.start_server()
        try:
            await body(client, master)
        finally:
            await client.close()

    asyncio.run(scenario())


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def _next_event(resp: Any) -> tuple[str, Any]:
    """The next server-sent event of ``resp``: (kind, decoded data)."""
    kind, data = "", ""
    while True:
        line = (await asyncio.wait_for(resp.content.readline(), 10)).decode()
        if line == "\n":
            return kind, json.loads(data)
        if line.startswith("event: "):
            kind = line[7:].strip()
        elif line.startswith("data: "):
            data += line[6:].strip()


def test_the_page_and_its_files_need_no_token_and_lock_the_page_down(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        for path, kind in (
            ("/", "text/html"),
            ("/console/main.js", "text/javascript"),
            ("/console/api.js", "text/javascript"),
            ("/console/console.css", "text/css"),
        ):
            resp = await client.get(path)
            assert resp.status == 200, path
            assert resp.content_type == kind
            assert resp.headers["Content-Security-Policy"] == CSP
            assert resp.headers["X-Content-Type-Options"] == "nosniff"
            assert resp.headers["Referrer-Policy"] == "no-referrer"
        assert "default-src 'self'" in CSP and "frame-ancestors 'none'" in CSP
        assert "unsafe-inline" not in CSP and "unsafe-eval" not in CSP
        page = await (await client.get("/")).text()
        assert '<script type="module" src="/console/main.js"></script>' in page
        assert "style=" not in page and "<style" not in page and "onclick" not in page
        for name in ("nope.js", "index.html", "..%2Fstatic%2Fmain.js", "_routes.py"):
            resp = await client.get(f"/console/{name}")
            assert resp.status == 404, name
            assert "error" in await resp.json()
        assert (await client.get("/api/v1/topologies")).status == 401  # the data is not public

    _run(tmp_path, body)


def test_no_script_of_the_console_writes_html() -> None:
    """Names come from user code: views build DOM with textContent and createElement only."""
    folder = Path(__file__).parents[2] / "common" / "console" / "static"
    scripts = sorted(folder.glob("*.js"))
    assert {p.name for p in scripts} >= {"api.js", "dag.js", "views.js", "main.js", "spark.js"}
    for path in scripts:
        text = path.read_text()
        for risky in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("):
            assert risky not in text, f"{path.name} uses {risky}"


def test_whoami_names_the_role_and_insecure_says_admin(tmp_path: Path) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        for role in ("viewer", "operator", "admin"):
            raw = master.tokens.create(role)
            resp = await client.get("/api/v1/whoami", headers=_bearer(raw))
            assert resp.status == 200
            assert await resp.json() == {
                "role": role,
                "id": raw.partition(".")[0],
                "insecure": False,
                "edits": True,
                "logs": True,
                "spark": True,
                "history": True,
            }
        resp = await client.get("/api/v1/whoami")
        assert resp.status == 401
        assert "no token" in (await resp.json())["error"]

    _run(tmp_path, body)

    async def insecure(client: TestClient[Any, Any], master: Master) -> None:
        resp = await client.get("/api/v1/whoami")
        assert await resp.json() == {
            "role": "admin",
            "id": None,
            "insecure": True,
            "edits": True,
            "logs": True,
            "spark": True,
            "history": True,
        }

    _run(tmp_path / "insecure", insecure, insecure=True)


def test_the_stream_sends_snapshots_is_bounded_and_ends_when_its_token_is_revoked(
    tmp_path: Path,
) -> None:
    async def body(client: TestClient[Any, Any], master: Master) -> None:
        raw = master.tokens.create("viewer")
        streams = []
        for _ in range(MAX_STREAMS_PER_TOKEN):
            resp = await client.get("/api/v1/events?topology=nope", headers=_bearer(raw))
            assert resp.status == 200
            assert resp.content_type == "text/event-stream"
            streams.append(resp)
        kind, snap = await _next_event(streams[0])
        assert kind == "snapshot"
        assert (snap["topologies"], snap["nodes"], snap["models"]) == ([], [], [])
        assert snap["spark_jobs"] == []
        assert snap["topology"] is None  # no topology of that name
        refused = await client.get("/api/v1/events", headers=_bearer(raw))
        assert refused.status == 429
        assert "event streams open" in (await refused.json())["error"]
        other = master.tokens.create("viewer")  # another token has its own bound
        extra = await client.get("/api/v1/events", headers=_bearer(other))
        assert extra.status == 200
        extra.close()

        master.tokens.revoke(raw.partition(".")[0])
        for resp in streams:
            while True:
                kind, data = await _next_event(resp)
                if kind == "end":
                    break
            assert data == {"error": "unknown or revoked token"}
            assert await asyncio.wait_for(resp.content.read(), 10) == b""  # and it is closed

    _run(tmp_path, body)


def test_streams_of_one_topology_share_each_snapshot(tmp_path: Path) -> None:
    """However many tabs watch a topology, the master builds its snapshot once per tick."""
    from aiohttp import web

    from headwater.common.console import add_console

    built: list[str | None] = []

    def snapshot_of(topology: str | None) -> dict[str, Any]:
        built.append(topology)
        return {"topology": topology, "n": len(built)}

    async def scenario() -> None:
        app = web.Application()
        add_console(app, snapshot_of, lambda request: ("viewer", None), False, insecure=True)
        client = TestClient(TestServer(app))
        await client.start_server()
        try:
            streams = [await client.get("/api/v1/events?topology=t") for _ in range(3)]
            firsts = [await _next_event(s) for s in streams]
            assert firsts == [("snapshot", {"topology": "t", "n": 1})] * 3
            other = await client.get("/api/v1/events")
            assert await _next_event(other) == ("snapshot", {"topology": None, "n": 2})
            other.close()
            seconds = [await _next_event(s) for s in streams]
            assert {data["n"] for _, data in seconds} == {3}  # the next tick: built once more
            assert built[:2] == ["t", None]
            assert built.count("t") == 2  # (the closed stream may tick once more for None)
        finally:
            await client.close()

    asyncio.run(scenario())


def test_a_server_shutting_down_ends_its_streams(tmp_path: Path) -> None:
    """An open console tab must not hold up a master's or an agent's shutdown."""
    from aiohttp import web

    from headwater.common.console import add_console

    async def scenario() -> None:
        app = web.Application()
        add_console(app, lambda t: {"t": t}, lambda request: ("viewer", None), False, True)
        client = TestClient(TestServer(app))
        await client.start_server()
        stream = await client.get("/api/v1/events")
        assert await _next_event(stream) == ("snapshot", {"t": None})
        closing = asyncio.ensure_future(client.server.close())
        assert await asyncio.wait_for(stream.content.read(), 10) == b""  # ended, no `end`
        await asyncio.wait_for(closing, 10)
        await client.close()

    asyncio.run(scenario())


def test_a_reader_that_stops_reading_loses_its_stream_and_its_slot(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Streams whose readers never read (their buffers full) are dropped after
    ``WRITE_TIMEOUT_S``: they hold no slot, so the token's bound frees up again."""
    monkeypatch.setattr(routes, "WRITE_TIMEOUT_S", 0.5)

    async def scenario() -> None:
        app = web.Application()
        routes.add_console(
            app,
            lambda topology: {"blob": "x" * (1 << 20)},  # a megabyte a second fills buffers fast
            lambda request: ("viewer", "t1"),
            edits=False,
            insecure=True,
        )
        server = TestServer(app)
        await server.start_server()
        stalled = []
        try:
            for _ in range(MAX_STREAMS_PER_TOKEN):
                sock = socket.socket()
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                sock.connect((server.host, server.port))
                sock.sendall(b"GET /api/v1/events HTTP/1.1\r\nHost: x\r\n\r\n")
                stalled.append(sock)  # and never read
            async with ClientSession() as session:

                async def status() -> int:
                    async with session.get(server.make_url("/api/v1/events")) as resp:
                        return resp.status

                await asyncio.sleep(0.5)  # the four streams have started
                assert await status() == 429
                deadline = asyncio.get_running_loop().time() + 60
                while await status() != 200:
                    assert asyncio.get_running_loop().time() < deadline, "no slot came free"
                    await asyncio.sleep(0.2)
        finally:
            for sock in stalled:
                sock.close()
            await server.close()

    asyncio.run(scenario())
