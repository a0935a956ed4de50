"""The health routes of the master's REST API (``_http.py`` adds them; ``_health_loop.py``):

GET /api/v1/topologies/NAME/health          its health manager's report: mode, diagnoses with
                                            their evidence, actions proposed and taken,
                                            black-listed ones, and the policy (viewer)
PUT /api/v1/topologies/NAME/health/policy   change the policy live: a JSON object of policy
                                            fields, e.g. {"mode": "recommend"} (operator)
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from headwater.common._exceptions import HeadwaterError

from ._health_loop import HealthLoop
from ._openapi_parts import answer, op

_PATH = "/api/v1/topologies/{name}/health"


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def add_health_routes(app: web.Application, health: HealthLoop) -> None:
    async def report(request: web.Request) -> web.Response:
        try:
            return web.json_response(health.report(request.match_info["name"]))
        except HeadwaterError as exc:
            return _error(404, str(exc))

    async def set_policy(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            body = await request.json()
        except (ValueError, RecursionError):
            return _error(400, 'send a JSON object of policy fields, e.g. {"mode": "recommend"}')
        if not isinstance(body, dict):
            return _error(400, 'send a JSON object of policy fields, e.g. {"mode": "recommend"}')
        try:
            return web.json_response(health.set_policy(name, body))
        except ValueError as exc:
            return _error(400, str(exc))
        except HeadwaterError as exc:
            return _error(404, str(exc))

    app.router.add_get(_PATH, report)
    app.router.add_put(f"{_PATH}/policy", set_policy)


def health_paths(name: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The health routes in the OpenAPI document (``name``: the topology's path parameter)."""
    bounds = {"type": "integer", "minimum": 1}
    fraction = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1}
    seconds = {"type": "number", "minimum": 0}
    policy = {
        "type": "object",
        "properties": {
            "mode": {"type": "string", "enum": ["off", "recommend", "auto"]},
            "min_parallelism": bounds,
            "max_parallelism": bounds,
            "per_component": {
                "type": "object",
                "additionalProperties": {"type": "array", "items": bounds},
                "description": "component: [min, max]",
            },
            "target_utilization": fraction,
            "stabilization_s": seconds,
            "cooldown_s": seconds,
            "scale_down_cap": fraction,
            "blacklist_s": seconds,
        },
    }
    return {
        _PATH: {
            "get": op(
                "its health manager's report: mode, diagnoses, actions, black-listed",
                "200",
                answer("the report", {"type": "object"}),
                parameters=[name],
                refusals=("404",),
            )
        },
        f"{_PATH}/policy": {
            "put": op(
                "change its health policy live",
                "200",
                answer("the policy now", policy),
                parameters=[name],
                requestBody={"required": True, "content": {"application/json": {"schema": policy}}},
                refusals=("400", "404"),
            )
        },
    }
