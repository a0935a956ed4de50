"""The master's REST API: the topology routes of every topology, plus

POST   /api/v1/topologies?entry=FILE&containers=N   submit a package (zip body)
DELETE /api/v1/topologies/NAME                      kill a topology
POST   /api/v1/topologies/NAME/revisions?action=attach|replace|remove|rollback&base=REV
       [&entry=FILE][&components=A,B][&author=WHO][&to=REV]   edit it live (zip body or none)
GET    /api/v1/nodes                                workers and agents, online or not
DELETE /api/v1/nodes/ID                             forget an offline node holding no containers
GET    /api/v1/traffic                              bytes the master's gRPC server took and gave
"""

from __future__ import annotations

from aiohttp import web

from headwater.common._exceptions import HeadwaterError
from headwater.common.control._revisions import EditError, StaleRevisionError

from ..tmaster._http import add_topology_routes
from ._master import Master

MAX_UPLOAD = 64 << 20


def make_app(master: Master) -> web.Application:
    app = web.Application(client_max_size=MAX_UPLOAD)
    add_topology_routes(
        app,
        master.tms.get,
        lambda: list(master.tms.values()),
        master.set_state,
        master.agent_revisions,
    )

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

    async def edit(request: web.Request) -> web.Response:
        q = request.query
        try:
            base = int(q["base"])
            to = int(q["to"]) if "to" in q else None
        except KeyError:
            raise web.HTTPBadRequest(
                text="name the revision the edit was made against: ?base=REV (GET "
                ".../revisions shows the current one)"
            ) from None
        except ValueError:
            raise web.HTTPBadRequest(text="base and to must be revision numbers") from None
        action = q.get("action", "")
        components = [c for c in q.get("components", "").split(",") if c]
        data = await request.read()
        try:
            record = master.edit(
                request.match_info["name"],
                action,
                base,
                data or None,
                q.get("entry"),
                components,
                q.get("author", ""),
                to,
            )
        except StaleRevisionError as exc:
            return web.json_response({"error": str(exc), "current": exc.current}, status=409)
        except EditError as exc:
            return web.json_response({"error": str(exc)}, status=400)
        except HeadwaterError as exc:
            return web.json_response({"error": str(exc)}, status=404)
        return web.json_response(record, status=202)

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
    app.router.add_post("/api/v1/topologies/{name}/revisions", edit)

    async def forget(request: web.Request) -> web.Response:
        node_id = request.match_info["id"]
        try:
            master.forget(node_id)
        except KeyError as exc:
            return web.json_response({"error": exc.args[0]}, status=404)
        except HeadwaterError as exc:
            return web.json_response({"error": str(exc)}, status=409)
        return web.json_response({"forgotten": node_id})

    async def traffic(request: web.Request) -> web.Response:
        return web.json_response(master.traffic.view())

    app.router.add_get("/api/v1/nodes", nodes)
    app.router.add_get("/api/v1/traffic", traffic)
    app.router.add_delete("/api/v1/nodes/{id}", forget)
    return app
