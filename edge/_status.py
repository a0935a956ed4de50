"""An agent's own status page: ``GET /status`` on loopback (``--status-port``).

``GET /metrics`` on the same port serves the same figures in the Prometheus
text format (``_prometheus.py``).

What the agent knows of itself (health and its reasons, backlog, ingestion,
uplink, the edge subgraphs it runs and their revisions), served by the agent
so that it still answers while the link to the cloud is down. Loopback only:
it is for the gateway's operator and local monitoring, with no credentials.
The web console of its edge subgraphs is at ``/`` (``_console.py``). A request
must name the port's loopback address as its ``Host`` (``loopback_only``): a
web page elsewhere cannot read it by rebinding its own name to 127.0.0.1.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Protocol

from aiohttp import web
from aiohttp.typedefs import Middleware

from headwater.common._ports import claimed

from ._console import ConsoleAgent, add_agent_console
from ._prometheus import AgentFigures, agent_exposition

log = logging.getLogger("headwater.edge.agent")
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class StatusAgent(ConsoleAgent, AgentFigures, Protocol):
    """What the status port reads of the agent: the console's and the exposition's view,
    and the master it dials."""

    @property
    def master(self) -> str: ...


def loopback_only(port: int) -> Middleware:
    """Refuse (421) a request whose ``Host`` is not this port's loopback address: what a
    browser sends to a name an attacker's DNS rebound to 127.0.0.1 is that name."""
    allowed = {f"{host}:{port}" for host in ("127.0.0.1", "localhost", "[::1]")}

    @web.middleware
    async def check(request: web.Request, handler: _Handler) -> web.StreamResponse:
        if request.headers.get("Host", "").lower() not in allowed:
            return web.json_response(
                {"error": f"this status port answers requests for 127.0.0.1:{port} only"},
                status=421,
            )
        return await handler(request)

    return check


async def serve_status(agent: StatusAgent, port: int) -> web.AppRunner:
    """Serve ``agent``'s view on ``127.0.0.1:port``; clean up the returned runner to stop."""

    async def status(request: web.Request) -> web.Response:
        s = agent.status()
        return web.json_response(
            {
                "id": agent.node_id,
                "master": agent.master,
                "attached": agent.attached,
                "containers": list(s.containers),
                "backlog_bytes": s.backlog_bytes,
                "backlog_batches": s.backlog_batches,
                "metrics": dict(s.metrics),
                "error": s.error,
                "health": s.health,
                "reasons": list(s.reasons),
                "topologies": {name: tm.state for name, tm in agent.tms.items()},
                "revisions": {name: tm.current for name, tm in agent.tms.items()},
            }
        )

    exposition = agent_exposition(agent)

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(
            body=exposition.render(), headers={"Content-Type": exposition.content_type}
        )

    app = web.Application(middlewares=[loopback_only(port)])
    app.router.add_get("/status", status)
    app.router.add_get("/metrics", metrics)
    add_agent_console(app, agent)  # the web console of its own edge subgraphs, at /
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    try:
        with claimed("127.0.0.1", port, "--status-port"):  # taken: PortInUse
            await web.TCPSite(runner, "127.0.0.1", port).start()
    except BaseException:
        await runner.cleanup()
        raise
    log.info("status on http://127.0.0.1:%d/status", port)
    return runner
