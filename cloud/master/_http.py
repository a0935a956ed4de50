"""The master's REST API: every topology's routes, the Spark jobs' (``_spark_http.py``), the
models' (``_models_http.py``), plus

POST   /api/v1/topologies?entry=FILE&containers=N   submit a package (zip body)
DELETE /api/v1/topologies/NAME                      kill a topology
POST   /api/v1/topologies/NAME/revisions?action=...&base=REV   edit it live, or preview
GET    /api/v1/topologies/NAME/files                 the package a revision runs
                                                    (both ``_edits_http.py``)
POST   /api/v1/topologies/NAME/move?components=A&to=WHERE&base=REV   place components
                                                    elsewhere, edge <-> cloud (``_moves.py``)
GET    /api/v1/nodes                                workers and agents, online or not
DELETE /api/v1/nodes/ID                             forget an offline node holding no containers
POST   /api/v1/nodes/ID/revoke                      cut a node off (its certificate is refused)
GET    /api/v1/topologies/NAME/logs?tail=N          its containers' logs (either scheduler)
GET    /api/v1/topologies/NAME/containers/C/logs?tail=N   one container's log
GET    /api/v1/nodes/ID/logs?tail=N                 a Docker-scheduled node's log
GET    /api/v1/traffic                              bytes the master's gRPC server took and gave
GET    /api/v1/leader                               the leading master: its addresses and leader
                                                    epoch (a standby answers it too: _standby.py)
POST   /api/v1/tokens                               create a token: {"role", "ttl", "description"}
GET    /api/v1/tokens                               every token, without its secret
DELETE /api/v1/tokens/ID                            revoke a token (not the last admin one: 409)
/api/v1/models/...                                   the model registry and rollouts
                                                    (``_models_http.py``)
/api/v1/topologies/NAME/health[/policy]             its health manager (``_health_http.py``)
GET    /api/v1/openapi.json                         all of this as an OpenAPI 3 document
GET    /metrics                                     the cluster in the Prometheus text format
                                                    (``_prometheus.py``)
GET    /  /console/FILE  /api/v1/whoami  /api/v1/events   the web console (cloud/console/):
                                                    its page and files need no token

Every request but the OpenAPI document and the console's page and files needs a token
(``Authorization: Bearer TOKEN``) of a role high enough for it: the table is
``cloud/_access.py``; a master run ``--insecure`` asks for none.

Every refusal is a 4xx with a JSON body ``{"error": REASON}``: a malformed
request or package is a 400, a package over a bound a 413 (the bounds are in
common/_package.py and ``MAX_CONTAINERS``).
"""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

from aiohttp import web

from headwater.common._exceptions import HeadwaterError, PackageRefusedError
from headwater.common._package import MAX_PACKAGE_BYTES
from headwater.common.security import JOIN_ROLES, JoinToken, parse_ttl
from headwater.common.statemgr import StateError

from .._access import require_tokens
from ..console import add_console_routes
from ..console._snapshot import topology_errors
from ..tmaster._http import add_metrics_route, add_topology_routes
from ._edits_http import add_edit_routes
from ._health_http import add_health_routes
from ._master import Master, topology_name_problem
from ._models_http import add_model_routes
from ._moves import add_move_routes
from ._openapi import openapi
from ._prometheus import master_exposition
from ._scheduler import LogsError
from ._spark_http import add_spark_job_routes
from ._topology_view import edge_view

_VERSION = re.compile(r"[1-9][0-9]{0,8}")
"""A model version in a path: 1 to 999999999, ASCII digits only."""
MAX_TOKEN_TTL_S = 3650 * 86400.0
MAX_TOKEN_DESCRIPTION = 200
"""The longest description a token keeps (tokens.json and every listing carry it)."""
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


@web.middleware
async def _json_errors(request: web.Request, handler: _Handler) -> web.StreamResponse:
    """Every refusal as ``{"error": REASON}`` (aiohttp's own, such as a body too large, too);
    a record the state manager did not keep is a 503."""
    try:
        return await handler(request)
    except StateError as exc:  # a record not kept (ZooKeeper unreachable): the request failed
        return _error(503, str(exc))
    except web.HTTPException as exc:
        if exc.status < 400 or exc.content_type == "application/json":
            raise
        return _error(exc.status, exc.text or exc.reason)


async def _json_body(request: web.Request) -> Any:
    """The request's JSON body; ValueError for one that is not JSON (not UTF-8, malformed, or
    nested so deep that decoding it would exhaust the stack)."""
    try:
        return await request.json()
    except RecursionError:
        raise ValueError("nested too deep") from None


def _refused(exc: HeadwaterError) -> web.Response:
    """A refused submission: 413 for a package over a bound, else 400."""
    too_large = isinstance(exc, PackageRefusedError) and exc.too_large
    return _error(413 if too_large else 400, str(exc))


def make_app(master: Master, insecure: bool = False) -> web.Application:
    """The REST API of ``master``; ``insecure``: without tokens (anyone who reaches it may
    do anything)."""
    access = [] if insecure else [require_tokens(master.tokens)]
    app = web.Application(client_max_size=MAX_PACKAGE_BYTES, middlewares=[_json_errors, *access])
    add_topology_routes(
        app,
        master.tms.get,
        lambda: list(master.tms.values()),
        master.set_state,
        master.agent_revisions,
        partial(edge_view, master),
        partial(topology_errors, master),
        master.book.held_views,
    )
    _add_submission_routes(app, master)
    add_edit_routes(app, master)
    add_move_routes(app, master)
    _add_node_routes(app, master)
    _add_token_routes(app, master)
    _add_log_routes(app, master)
    add_model_routes(app, master.models, master.rollouts)
    add_health_routes(app, master.health)
    add_spark_job_routes(app, master.spark_jobs)
    add_metrics_route(app, master_exposition(master))

    async def document(request: web.Request) -> web.Response:
        from headwater import __version__

        return web.json_response(openapi(__version__))

    app.router.add_get("/api/v1/openapi.json", document)
    add_console_routes(app, master, insecure)
    return app


def _add_submission_routes(app: web.Application, master: Master) -> None:
    """Submit and kill a topology."""

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
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _refused(exc)
        return web.json_response(result, status=201)

    async def kill(request: web.Request) -> web.Response:
        problem = topology_name_problem(request.match_info["name"])
        if problem is not None:
            return _error(400, problem)
        try:
            master.kill(request.match_info["name"])
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _error(404, str(exc))
        return web.json_response({"killed": request.match_info["name"]})

    app.router.add_post("/api/v1/topologies", submit)
    app.router.add_delete("/api/v1/topologies/{name}", kill)


def _add_node_routes(app: web.Application, master: Master) -> None:
    """The nodes: list, forget, revoke; and the master's gRPC traffic."""

    async def nodes(request: web.Request) -> web.Response:
        return web.json_response([r.view() for _, r in sorted(master.nodes.records.items())])

    async def forget(request: web.Request) -> web.Response:
        node_id = request.match_info["id"]
        try:
            master.forget(node_id)
        except KeyError as exc:
            return web.json_response({"error": exc.args[0]}, status=404)
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return web.json_response({"error": str(exc)}, status=409)
        return web.json_response({"forgotten": node_id})

    async def revoke(request: web.Request) -> web.Response:
        node_id = request.match_info["id"]
        try:
            master.nodes.revoke(node_id)
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return web.json_response({"error": str(exc)}, status=409)
        return web.json_response({"revoked": node_id})

    async def traffic(request: web.Request) -> web.Response:
        return web.json_response(master.traffic.view())

    async def leader(request: web.Request) -> web.Response:
        me = {"grpc": master.grpc_address, "http": master.http_url}
        return web.json_response({"role": "leader", "epoch": master.nodes.epoch, "leader": me})

    app.router.add_get("/api/v1/nodes", nodes)
    app.router.add_get("/api/v1/leader", leader)
    app.router.add_get("/api/v1/traffic", traffic)
    app.router.add_delete("/api/v1/nodes/{id}", forget)
    app.router.add_post("/api/v1/nodes/{id}/revoke", revoke)


def _add_token_routes(app: web.Application, master: Master) -> None:
    async def create(request: web.Request) -> web.Response:
        try:
            body = await _json_body(request)
        except ValueError:
            return _error(400, 'send JSON: {"role": ROLE, "ttl": "1h", "description": TEXT}')
        if not isinstance(body, dict):
            return _error(400, 'send a JSON object: {"role": ROLE, "ttl": "1h"}')
        role, ttl, description = body.get("role"), body.get("ttl"), body.get("description", "")
        if not isinstance(role, str) or not isinstance(description, str):
            return _error(400, "role and description are strings")
        if len(description) > MAX_TOKEN_DESCRIPTION:
            return _error(400, f"a description is at most {MAX_TOKEN_DESCRIPTION} characters")
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
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
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
        now = time.time()
        admins = {r.id for r in master.tokens.records() if r.role == "admin" and not r.expired(now)}
        if admins == {token_id}:
            return _error(
                409,
                f"{token_id} is the last admin token: create another admin token first, "
                "or no one could manage tokens, submit or kill again",
            )
        if not master.tokens.revoke(token_id):
            return _error(404, f"no token {token_id!r} (headwater token list shows them)")
        return web.json_response({"revoked": token_id})

    app.router.add_post("/api/v1/tokens", create)
    app.router.add_get("/api/v1/tokens", listing)
    app.router.add_delete("/api/v1/tokens/{id}", revoke)


def _add_log_routes(app: web.Application, master: Master) -> None:
    """Container logs, as the scheduler reads them: the Docker scheduler through the Docker
    API, the worker scheduler by asking the worker that runs the container."""
    from ._docker import tail_lines

    async def answer(request: web.Request, name: str, containers: list[int] | None) -> Any:
        try:
            tail = tail_lines(request.query.get("tail"))
        except ValueError as exc:
            return _error(400, str(exc))
        dep = master.deployments.get(name)
        if dep is None:
            known = ", ".join(sorted(master.deployments)) or "none"
            return _error(404, f"no topology named {name!r} (running: {known})")
        if containers is not None and not all(0 <= c < dep.containers for c in containers):
            return _error(
                404,
                f"topology {name!r} has containers 0 to {dep.containers - 1}, not {containers[0]}",
            )
        try:
            views = await asyncio.gather(
                *(
                    master.scheduler.logs(dep, c, tail)
                    for c in (containers if containers is not None else range(dep.containers))
                )
            )
        except LogsError as exc:
            return _error(exc.status, str(exc))
        return web.json_response(views if containers is None else views[0])

    async def of_topology(request: web.Request) -> web.StreamResponse:
        return await answer(request, request.match_info["name"], None)  # type: ignore[no-any-return]

    async def of_container(request: web.Request) -> web.StreamResponse:
        text = request.match_info["container"]
        if not text.isdigit() or not text.isascii() or len(text) > 4:
            return _error(404, f"no container {text[:20]!r}: containers are numbers (0, 1, ...)")
        return await answer(request, request.match_info["name"], [int(text)])  # type: ignore[no-any-return]

    async def of_node(request: web.Request) -> web.StreamResponse:
        node_id = request.match_info["id"]
        runs = [
            (dep.name, c)
            for dep in master.deployments.values()
            for c, node in sorted(dep.assignment.items())
            if node == node_id
        ]
        if runs and master.scheduler.name == "docker":  # a node per container
            return await answer(request, runs[0][0], [runs[0][1]])  # type: ignore[no-any-return]
        if node_id in master.nodes.records:
            held = ", ".join(f"{t}/{c}" for t, c in runs[:10]) or "none"
            return _error(
                409,
                f"node {node_id!r} is a worker the master did not start (only the Docker "
                "scheduler's nodes have a log here): its own log is where it was started; "
                f"its containers' logs are TOPOLOGY/C's (it runs: {held})",
            )
        return _error(404, f"no node {node_id!r} (headwater nodes lists them)")

    app.router.add_get("/api/v1/topologies/{name}/logs", of_topology)
    app.router.add_get("/api/v1/topologies/{name}/containers/{container}/logs", of_container)
    app.router.add_get("/api/v1/nodes/{id}/logs", of_node)
