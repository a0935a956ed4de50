"""The agent's status port answers requests for its loopback address only (DNS rebinding)."""

from __future__ import annotations

import asyncio

from aiohttp import ClientSession, web
from aiohttp.test_utils import TestServer

from headwater.edge._status import loopback_only

from .._ports import free_port


def test_a_request_for_another_host_is_refused() -> None:
    async def scenario() -> None:
        port = free_port()

        async def ok(request: web.Request) -> web.Response:
            return web.json_response({"ok": 1})

        app = web.Application(middlewares=[loopback_only(port)])
        app.router.add_get("/status", ok)
        server = TestServer(app, host="127.0.0.1", port=port)
        await server.start_server()
        try:
            async with ClientSession() as session:
                url = f"http://127.0.0.1:{port}/status"
                for host, status in [
                    (f"127.0.0.1:{port}", 200),
                    (f"localhost:{port}", 200),
                    (f"LOCALHOST:{port}", 200),
                    (f"evil.example:{port}", 421),
                    ("127.0.0.1", 421),
                    (f"127.0.0.1:{port + 1}", 421),
                ]:
                    async with session.get(url, headers={"Host": host}) as resp:
                        assert resp.status == status, host
                        if status == 421:
                            body = await resp.json()
                            assert body == {
                                "error": f"this status port answers requests for "
                                f"127.0.0.1:{port} only"
                            }
        finally:
            await server.close()

    asyncio.run(scenario())
