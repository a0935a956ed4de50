"""A standby master's REST port: where the leader is, until this master leads.

While another master leads, a standby binds neither the nodes' gRPC port nor the
join port (nodes attach to whichever master answers: the leader), and its REST
port says where the leader is: ``GET /api/v1/leader`` answers with the leader's
addresses and this master's role, and every other request is redirected there
(``307``: the method and body are kept, so a write is made once, by the leader;
a client that follows redirects is served as if it had asked the leader). With no
leader elected yet, a ``503`` says to try again. Once this master wins, the port is
handed to the leader's own API (``stand_by`` returns).
"""

from __future__ import annotations

import logging
import socket
import ssl
from typing import Any

from aiohttp import web

from headwater.common._ports import claimed
from headwater.common.statemgr import StateManager, ZkStateManager

from ._leadership import Leadership

log = logging.getLogger("headwater.master")
RETRY_AFTER_S = 2


def _app(leadership: Leadership) -> web.Application:
    async def where(request: web.Request) -> web.Response:
        return web.json_response({"role": "standby", "leader": leadership.leader()})

    async def elsewhere(request: web.Request) -> web.Response:
        leader = leadership.leader()
        url = str(leader.get("http") or "") if leader else ""
        if not url or url == leadership.me.get("http"):
            return web.json_response(
                {"error": "no master leads yet (an election is under way): try again shortly"},
                status=503,
                headers={"Retry-After": str(RETRY_AFTER_S)},
            )
        raise web.HTTPTemporaryRedirect(url.rstrip("/") + request.path_qs)

    app = web.Application()
    app.router.add_get("/api/v1/leader", where)
    app.router.add_route("*", "/{tail:.*}", elsewhere)
    return app


async def stand_by(
    leadership: Leadership,
    host: str,
    port: int,
    tls: ssl.SSLContext | None,
    url: Any,
) -> tuple[int, int]:
    """Answer on the REST port as a standby until this master leads: ``(leader epoch,
    the port it was bound to)``. ``url(bound_port)``: this master's REST URL as others
    reach it (published in the election for standbys' redirects)."""
    runner = web.AppRunner(_app(leadership), access_log=None)
    await runner.setup()
    try:
        site = web.TCPSite(runner, host, port, ssl_context=tls)
        with claimed(host, port, "--http-port"):  # taken: PortInUse, one line
            await site.start()
        bound = int(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
        leadership.me["http"] = url(bound)
        epoch = await leadership.won()
    finally:
        await runner.cleanup()
    return epoch, bound


def reachable(host: str) -> str:
    """``host`` as others reach it: this machine's name where it binds every address."""
    name = socket.getfqdn() if host in ("", "0.0.0.0", "::") else host
    return f"[{name}]" if ":" in name else name  # an IPv6 address


async def lead_first(
    state: StateManager,
    grpc: tuple[str, int],
    http: tuple[str, int],
    tls: ssl.SSLContext | None,
) -> tuple[Leadership | None, int]:
    """On ZooKeeper state, stand by until this master leads: its ``Leadership`` and the REST
    port it holds; on local files (one master) ``(None, the REST port)`` at once."""
    if not isinstance(state, ZkStateManager):
        return None, http[1]
    leadership = Leadership(state.client, state.root, {"grpc": f"{reachable(grpc[0])}:{grpc[1]}"})
    scheme = "https" if tls else "http"
    _, bound = await stand_by(
        leadership, http[0], http[1], tls, lambda port: f"{scheme}://{reachable(http[0])}:{port}"
    )
    return leadership, bound
