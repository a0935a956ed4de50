"""The master's REST API: the topology routes of every topology, plus

POST   /api/v1/topologies?entry=FILE&containers=N   submit a package (zip body)
DELETE /api/v1/topologies/NAME                      kill a topology
GET    /api/v1/nodes                                workers and agents, online or not
"""

from __future__ import annotations

from aiohttp import web

from headwater.common._exceptions import HeadwaterError

from ..tmaster._http import add_topology_routes
from ._master import Master

MAX_UPLOAD = 64 << 20


def make_app(master: Master) -> web.Application:
    app = web.Application(client_max_size=MAX_UPLOAD)
    add_topology_routes(app, master.tms.get, lambda: list(master.tms.values()), master.set_state)

    async def submit(request: web.Request) -> web.Response:
        entry = request.query.get("entry")
        try:
            containers = int(request.query.get("containers", "1"))
        except ValueError:
            raise web.HTTPBadRequest(text="containers must be a whole number") from None
        if not entry:
            raise web.HTTPBadRequest(text="name the topology file: ?entry=FILE.py")
        data = await request.read()
        try:
            result = master.submit(data, entry, containers)
        except HeadwaterError as exc:
            raise web.HTTPBadRequest(text=str(exc)) from exc
        return web.json_response(result, status=201)

    async def kill(request: web.Request) -> web.Response:
        try:
            master.kill(request.match_info["name"])
        except HeadwaterError as exc:
            raise web.HTTPNotFound(text=str(exc)) from exc
        return web.json_response({"killed": request.match_info["name"]})

    async def nodes(request: web.Request) -> web.Response:
        return web.json_response([r.view() for _, r in sorted(master.nodes.items())])

    app.router.add_post("/api/v1/topologies", submit)
    app.router.add_delete("/api/v1/topologies/{name}", kill)
    app.router.add_get("/api/v1/nodes", nodes)
    return app
