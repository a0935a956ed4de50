"""An agent's own status page: ``GET /status`` on loopback (``--status-port``).

What the agent knows of itself (health and its reasons, backlog, ingestion,
uplink, the edge subgraphs it runs and their revisions), served by the agent
so that it still answers while the link to the cloud is down. Loopback only:
it is for the gateway's operator and local monitoring, with no credentials.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from aiohttp import web

if TYPE_CHECKING:
    from ._agent import Agent

log = logging.getLogger("headwater.edge.agent")


async def serve_status(agent: Agent, port: int) -> web.AppRunner:
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

    app = web.Application()
    app.router.add_get("/status", status)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    log.info("status on http://127.0.0.1:%d/status", port)
    return runner
