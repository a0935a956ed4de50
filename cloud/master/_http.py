"""The master's REST API: the topology routes of every topology, plus

POST   /api/v1/topologies?entry=FILE&containers=N   submit a package (zip body)
DELETE /api/v1/topologies/NAME                      kill a topology
POST   /api/v1/topologies/NAME/revisions?action=attach|replace|remove|rollback&base=REV
       [&entry=FILE][&components=A,B][&author=WHO][&to=REV]   edit it live (zip body or none)
GET    /api/v1/nodes                                workers and agents, online or not
DELETE /api/v1/nodes/ID                             forget an offline node holding no containers
POST   /api/v1/nodes/ID/revoke                      cut a node off (its certificate is refused)
GET    /api/v1/traffic                              bytes the master's gRPC server took and gave
POST   /api/v1/tokens                               create a token: {"role", "ttl", "description"}
GET    /api/v1/tokens                               every token, without its secret
DELETE /api/v1/tokens/ID                            revoke a token
GET    /api/v1/openapi.json                         all of this as an OpenAPI 3 document

Every request but the last needs a token (``Authorization: Bearer TOKEN``) of
a role high enough for it: the table is ``cloud/_access.py``; a master run
``--insecure`` asks for none.

Every refusal is a 4xx with a JSON body ``{"error": REASON}``: a malformed
request or package is a 400, a package over a bound a 413 (the bounds are in
common/_package.py and ``MAX_CONTAINERS``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

from headwater.common._exceptions import HeadwaterError, PackageRefusedError
from headwater.common._package import MAX_PACKAGE_BYTES
from headwater.common.control._revisions import EditError, StaleRevisionError
from headwater.common.security import JOIN_ROLES, JoinToken, parse_ttl

from .._access import require_tokens
from ..tmaster._http import add_topology_routes
from ._master import Master, topology_name_problem
from ._openapi import openapi

MAX_UPLOAD = MAX_PACKAGE_BYTES
MAX_TOKEN_TTL_S = 3650 * 86400.0
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


@web.middleware
async def _json_errors(request: web.Request, handler: _Handler) -> web.StreamResponse:
    """Every refusal as ``{"error": REASON}`` (aiohttp's own, such as a body too large, too)."""
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400 or exc.content_type == "application/json":
            raise
        return _error(exc.status, exc.text or exc.reason)


def _refused(exc: HeadwaterError) -> web.Response:
    """A refused submission: 413 for a package over a bound, else 400."""
    too_large = isinstance(exc, PackageRefusedError) and exc.too_large
    return _error(413 if too_large else 400, str(exc))


def make_app(master: Master, insecure: bool = False) -> web.Application:
    """The REST API of ``master``; ``insecure``: without tokens (anyone who reaches it may
    do anything)."""
    access = [] if insecure else [require_tokens(master.tokens)]
    app = web.Application(client_max_size=MAX_UPLOAD, middlewares=[_json_errors, *access])
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
            return _error(400, "containers must be a whole number")
        if not entry:
            return _error(400, "name the topology file: ?entry=FILE.py")
        data = await request.read()
        try:
            result = await master.submit(data, entry, containers)
        except HeadwaterError as exc:
            return _refused(exc)
        return web.json_response(result, status=201)

    async def edit(request: web.Request) -> web.Response:
        problem = topology_name_problem(request.match_info["name"])
        if problem is not None:
            return _error(400, problem)
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
            record = await master.edit(
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
        except (EditError, PackageRefusedError) as exc:
            return _refused(exc)
        except HeadwaterError as exc:
            return web.json_response({"error": str(exc)}, status=404)
        return web.json_response(record, status=202)

    async def kill(request: web.Request) -> web.Response:
        problem = topology_name_problem(request.match_info["name"])
        if problem is not None:
            return _error(400, problem)
        try:
            master.kill(request.match_info["name"])
        except HeadwaterError as exc:
            return _error(404, str(exc))
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

    async def revoke(request: web.Request) -> web.Response:
        node_id = request.match_info["id"]
        try:
            master.revoke(node_id)
        except HeadwaterError as exc:
            return web.json_response({"error": str(exc)}, status=409)
        return web.json_response({"revoked": node_id})

    async def traffic(request: web.Request) -> web.Response:
        return web.json_response(master.traffic.view())

    app.router.add_get("/api/v1/nodes", nodes)
    app.router.add_get("/api/v1/traffic", traffic)
    app.router.add_delete("/api/v1/nodes/{id}", forget)
    app.router.add_post("/api/v1/nodes/{id}/revoke", revoke)
    _add_token_routes(app, master)

    async def document(request: web.Request) -> web.Response:
        from headwater import __version__

        return web.json_response(openapi(__version__))

    app.router.add_get("/api/v1/openapi.json", document)
    return app


def _add_token_routes(app: web.Application, master: Master) -> None:
    async def create(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(400, 'send JSON: {"role": ROLE, "ttl": "1h", "description": TEXT}')
        if not isinstance(body, dict):
            return _error(400, 'send a JSON object: {"role": ROLE, "ttl": "1h"}')
        role, ttl, description = body.get("role"), body.get("ttl"), body.get("description", "")
        if not isinstance(role, str) or not isinstance(description, str):
            return _error(400, "role and description are strings")
        if ttl is not None and not isinstance(ttl, str):
            return _error(400, 'ttl is a string such as "90s", "15m", "24h" or "7d"')
        if role in JOIN_ROLES and not master.join_port:
            return _error(
                409,
                "this master runs without TLS (--insecure): nodes join without a token, "
                "so there is no join token to make",
            )
        try:
            ttl_s = None if ttl is None else parse_ttl(ttl)
            if ttl_s is not None and ttl_s > MAX_TOKEN_TTL_S:
                return _error(400, "a token lasts at most 3650d; leave ttl out for no expiry")
            raw = master.tokens.create(role, ttl_s, description)
        except HeadwaterError as exc:
            return _error(400, str(exc))
        token_id = raw.partition(".")[0]
        record = next(r for r in master.tokens.records() if r.id == token_id)
        text = (
            str(JoinToken(master.join_port, raw, master.ca_fingerprint))
            if role in JOIN_ROLES
            else raw
        )
        return web.json_response(
            {"id": token_id, "token": text, "role": role, "expires": record.expires}, status=201
        )

    async def listing(request: web.Request) -> web.Response:
        return web.json_response([r.view() for r in master.tokens.records()])

    async def revoke(request: web.Request) -> web.Response:
        token_id = request.match_info["id"]
        if not master.tokens.revoke(token_id):
            return _error(404, f"no token {token_id!r} (headwater token list shows them)")
        return web.json_response({"revoked": token_id})

    app.router.add_post("/api/v1/tokens", create)
    app.router.add_get("/api/v1/tokens", listing)
    app.router.add_delete("/api/v1/tokens/{id}", revoke)
