"""The topology master's JSON endpoint (tracker-style, read-mostly)."""

from __future__ import annotations

from aiohttp import web

from ._master import TopologyMaster


def make_app(tm: TopologyMaster) -> web.Application:
    base = f"/api/v1/topologies/{tm.topology.name}"

    async def topologies(request: web.Request) -> web.Response:
        return web.json_response([tm.summary()])

    async def topology(request: web.Request) -> web.Response:
        return web.json_response(tm.summary())

    async def metrics(request: web.Request) -> web.Response:
        return web.json_response(tm.metrics_view())

    async def plan(request: web.Request) -> web.Response:
        return web.json_response(tm.plan.to_dict())

    async def checkpoints(request: web.Request) -> web.Response:
        return web.json_response(tm.checkpoints_view())

    async def exceptions(request: web.Request) -> web.Response:
        return web.json_response(list(tm.exceptions))

    async def activate(request: web.Request) -> web.Response:
        tm.set_state("RUNNING")
        return web.json_response({"state": tm.state})

    async def deactivate(request: web.Request) -> web.Response:
        tm.set_state("PAUSED")
        return web.json_response({"state": tm.state})

    async def not_found(request: web.Request) -> web.Response:
        raise web.HTTPNotFound(
            text=f"no such resource; topologies are listed at /api/v1/topologies "
            f"(this master runs {tm.topology.name!r})"
        )

    app = web.Application()
    app.router.add_get("/api/v1/topologies", topologies)
    app.router.add_get(base, topology)
    app.router.add_get(f"{base}/metrics", metrics)
    app.router.add_get(f"{base}/plan", plan)
    app.router.add_get(f"{base}/exceptions", exceptions)
    app.router.add_get(f"{base}/checkpoints", checkpoints)
    app.router.add_post(f"{base}/activate", activate)
    app.router.add_post(f"{base}/deactivate", deactivate)
    return app
