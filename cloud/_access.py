"""Who may call what on the REST API: one table, (method, route) -> the role it needs.

Served by the master and by the topology master of ``headwater run``. Every
request carries ``Authorization: Bearer ID.SECRET`` (a token of
``common/security/_tokens.py``); the roles are ordered, each may do what the
ones before it may:

- ``viewer``: every read (GET), tokens excepted, ``/metrics`` included;
- ``operator``: activate, deactivate, live edits (attach, replace, remove,
  rollback, move), model rollouts and rollbacks, and container logs (a log holds
  whatever user code prints: records, paths, a careless secret; a viewer sees
  the curated views only);
- ``admin``: submit, kill (topologies and Spark jobs), forget a node, tokens, model
  uploads (a model is code-like data that reaches the edge).

A job token (role ``job``, minted by the master for a Spark job submitted with
``registers``) is outside that order: it may call ``JOB_ROUTES`` only (register a
version, read it back), and only for the model names in its ``scope``; anything else
is a 403.

``ACCESS`` is the whole policy. A route missing from it is refused (deny by
default; ``tests/cloud/test_rest_auth.py`` checks that every route the apps
register is in it). A request for no route at all (a 404 or a 405) needs a
viewer's token, so that a stranger learns nothing. A missing, malformed,
unknown, revoked or expired token is a 401 with ``WWW-Authenticate: Bearer``;
a valid token whose role is too low is a 403; both say why in
``{"error": REASON}``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping

from aiohttp import web
from aiohttp.typedefs import Middleware

from headwater.common.security import API_ROLES, JOB_ROLE, TokenRecord, TokenStore, role_allows

PUBLIC = "public"  # needs no token
_TOPOLOGY = "/api/v1/topologies/{name}"

ACCESS: dict[tuple[str, str], str] = {
    ("GET", "/api/v1/openapi.json"): PUBLIC,
    ("GET", "/"): PUBLIC,  # the web console's page and files (its data needs a token)
    ("GET", "/console/{file}"): PUBLIC,
    ("GET", "/api/v1/whoami"): "viewer",
    ("GET", "/api/v1/events"): "viewer",
    ("GET", "/api/v1/topologies"): "viewer",
    ("GET", _TOPOLOGY): "viewer",
    ("GET", f"{_TOPOLOGY}/metrics"): "viewer",
    ("GET", f"{_TOPOLOGY}/plan"): "viewer",
    ("GET", f"{_TOPOLOGY}/checkpoints"): "viewer",
    ("GET", f"{_TOPOLOGY}/exceptions"): "viewer",
    ("GET", f"{_TOPOLOGY}/revisions"): "viewer",
    ("GET", f"{_TOPOLOGY}/health"): "viewer",
    ("GET", f"{_TOPOLOGY}/history"): "viewer",  # the console's charts
    ("GET", "/api/v1/nodes"): "viewer",
    ("GET", "/api/v1/leader"): "viewer",
    ("GET", "/api/v1/traffic"): "viewer",
    ("GET", "/metrics"): "viewer",  # Prometheus: scrape with a viewer's bearer token
    ("POST", f"{_TOPOLOGY}/activate"): "operator",
    ("POST", f"{_TOPOLOGY}/deactivate"): "operator",
    ("POST", f"{_TOPOLOGY}/revisions"): "operator",
    ("POST", f"{_TOPOLOGY}/move"): "operator",
    ("GET", f"{_TOPOLOGY}/files"): "operator",  # its code (which may hold secrets)
    ("PUT", f"{_TOPOLOGY}/health/policy"): "operator",
    ("GET", f"{_TOPOLOGY}/logs"): "operator",
    ("GET", f"{_TOPOLOGY}/containers/{{container}}/logs"): "operator",
    ("GET", "/api/v1/nodes/{id}/logs"): "operator",
    ("GET", "/api/v1/models"): "viewer",
    ("GET", "/api/v1/models/{name}"): "viewer",
    ("GET", "/api/v1/models/{name}/{version}"): "viewer",
    ("GET", "/api/v1/models/{name}/rollouts"): "viewer",
    ("POST", "/api/v1/models/{name}/rollouts"): "operator",
    ("POST", "/api/v1/models/{name}/rollback"): "operator",
    ("POST", "/api/v1/models/{name}"): "admin",
    ("POST", "/api/v1/models/{name}/versions"): "admin",
    ("POST", "/api/v1/topologies"): "admin",
    ("DELETE", _TOPOLOGY): "admin",
    ("DELETE", "/api/v1/nodes/{id}"): "admin",
    ("POST", "/api/v1/nodes/{id}/revoke"): "admin",
    ("GET", "/api/v1/spark/jobs"): "viewer",
    ("GET", "/api/v1/spark/jobs/{name}"): "viewer",
    ("GET", "/api/v1/spark/jobs/{name}/logs"): "operator",
    ("POST", "/api/v1/spark/jobs"): "admin",
    ("DELETE", "/api/v1/spark/jobs/{name}"): "admin",
    ("GET", "/api/v1/tokens"): "admin",
    ("POST", "/api/v1/tokens"): "admin",
    ("DELETE", "/api/v1/tokens/{id}"): "admin",
}
"""(method, route as registered) -> the role it needs, or ``PUBLIC``."""

JOB_ROUTES = frozenset(
    {
        ("POST", "/api/v1/models/{name}/versions"),
        ("GET", "/api/v1/models/{name}/{version}"),
    }
)
"""What a job token may call (for the models of its scope): register, and read it back."""

UNROUTED = "viewer"  # what a request that matches no route (404, 405) needs
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def needed_role(method: str, route: str | None) -> str | None:
    """The role ``method route`` needs; ``UNROUTED`` for no route; None: no rule (refused).

    HEAD is a GET without the body, so it needs what the GET needs."""
    if route is None:
        return UNROUTED
    return ACCESS.get(("GET" if method == "HEAD" else method, route))


def _a(role: str) -> str:
    return f"{'an' if role[0] in 'aeiou' else 'a'} {role}"


def _unauthorized(reason: str) -> web.Response:
    return web.json_response(
        {"error": reason},
        status=401,
        headers={"WWW-Authenticate": 'Bearer realm="headwater"'},
    )


def authenticate(tokens: TokenStore, header: str | None) -> TokenRecord | str:
    """The token record the ``Authorization`` header carries, or why there is none."""
    if not header:
        return "no token: send Authorization: Bearer TOKEN"
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        return "the Authorization header is not 'Bearer TOKEN'"
    token = token.strip()
    record = tokens.check(token)
    if record is not None:
        return record
    token_id = token.partition(".")[0]
    known = next((r for r in tokens.records() if r.id == token_id), None)
    if known is not None and known.expired(time.time()):
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(known.expires or 0))
        return f"token {token_id} expired at {when}"
    return "unknown or revoked token"


def job_refusal(
    record: TokenRecord, method: str, route: str | None, match: Mapping[str, str]
) -> str | None:
    """Why the job token ``record`` may not call ``method route``; None when it may."""
    names = ", ".join(record.scope) or "none"
    what = f"a job's token ({record.description}) registers versions of its models only ({names})"
    if ("GET" if method == "HEAD" else method, route) not in JOB_ROUTES:
        return f"{what}: {method} {route or 'this path'} is refused"
    if match.get("name") not in record.scope:
        return f"{what}: model {str(match.get('name'))[:64]!r} was not declared at submit"
    return None


def require_tokens(tokens: TokenStore) -> Middleware:
    """The middleware that holds every request to ``ACCESS``, checking tokens in ``tokens``."""

    @web.middleware
    async def access(request: web.Request, handler: _Handler) -> web.StreamResponse:
        resource = request.match_info.route.resource
        route = None if resource is None else resource.canonical
        needed = needed_role(request.method, route)
        if needed is None:
            return web.json_response(
                {"error": f"{request.method} {request.path} has no access rule: refused"},
                status=403,
            )
        if needed == PUBLIC:
            return await handler(request)
        found = authenticate(tokens, request.headers.get("Authorization"))
        if isinstance(found, str):
            return _unauthorized(found)
        if found.role == JOB_ROLE:
            refusal = job_refusal(found, request.method, route, request.match_info)
            if refusal is not None:
                return web.json_response({"error": refusal}, status=403)
            return await handler(request)
        if found.role not in API_ROLES:
            return web.json_response(
                {"error": f"this is a join token ({found.role}): it enrols a node, not the API"},
                status=403,
            )
        if not role_allows(found.role, needed):
            return web.json_response(
                {
                    "error": f"{request.method} {request.path} needs the {needed} role; "
                    f"this token is {_a(found.role)}"
                },
                status=403,
            )
        return await handler(request)

    return access
