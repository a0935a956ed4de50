"""The master's REST API as an OpenAPI 3 document, served at ``GET /api/v1/openapi.json``.

Served without a token (it says what the API is, not what the cluster holds).
``tests/cloud/test_openapi.py`` keeps it true: every route the app registers is
here with its methods and nothing else is, each operation names the role it
needs as ``x-role`` (from ``cloud/_access.py``), and schemathesis drives a real
master through it.
"""

from __future__ import annotations

from typing import Any

from .._access import ACCESS, PUBLIC

_ERROR = {
    "description": "refused: why, in error",
    "content": {
        "application/json": {
            "schema": {
                "type": "object",
                "properties": {"error": {"type": "string"}},
                "required": ["error"],
            }
        }
    },
}
_NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "the topology's name",
    "schema": {"type": "string"},
}
_ZIP = {"type": "string", "format": "binary", "description": "the package: a zip"}


def _json(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema or {"type": "object"}}},
    }


def _query(name: str, description: str, schema: dict[str, Any], required: bool = False) -> Any:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


def _op(summary: str, ok: str, answer: dict[str, Any], **extra: Any) -> dict[str, Any]:
    responses: dict[str, Any] = {ok: answer, "401": _ERROR, "403": _ERROR}
    for status in extra.pop("refusals", ("400", "404")):
        responses[status] = _ERROR
    return {"summary": summary, "responses": responses, **extra}


def _get(summary: str, schema: dict[str, Any] | None = None, topology: bool = True) -> Any:
    extra = {"parameters": [_NAME]} if topology else {"refusals": ()}
    return _op(summary, "200", _json(summary, schema), **extra)


def _paths() -> dict[str, dict[str, Any]]:
    t = "/api/v1/topologies/{name}"
    role = {"type": "string", "enum": ["viewer", "operator", "admin", "agent", "worker"]}
    return {
        "/api/v1/openapi.json": {
            "get": {
                "summary": "this document",
                "security": [],
                "responses": {"200": _json("the OpenAPI document")},
            }
        },
        "/api/v1/topologies": {
            "get": _get("every topology's summary", {"type": "array"}, topology=False),
            "post": _op(
                "submit a topology package (a zip made by headwater submit)",
                "201",
                _json("the topology and its containers"),
                parameters=[
                    _query("entry", "the topology file inside the package", {"type": "string"}),
                    _query("containers", "how many containers (1 to 256)", {"type": "integer"}),
                ],
                requestBody={"content": {"application/octet-stream": {"schema": _ZIP}}},
                refusals=("400", "413"),
            ),
        },
        t: {
            "get": _get("a topology's summary: state, containers, components"),
            "delete": _op(
                "kill a topology", "200", _json("the killed topology"), parameters=[_NAME]
            ),
        },
        f"{t}/metrics": {"get": _get("metrics per component, task and stream manager")},
        f"{t}/plan": {"get": _get("the physical plan")},
        f"{t}/checkpoints": {"get": _get("exactly-once checkpoints")},
        f"{t}/exceptions": {"get": _get("errors reported by instances", {"type": "array"})},
        f"{t}/revisions": {
            "get": _get("live edits: the current revision, the history, the agents' revisions"),
            "post": _op(
                "edit a running topology live: attach, replace, remove, rollback",
                "202",
                _json("the revision record"),
                parameters=[
                    _NAME,
                    _query(
                        "action",
                        "what the edit does",
                        {"type": "string", "enum": ["attach", "replace", "remove", "rollback"]},
                    ),
                    _query("base", "the revision it was made against", {"type": "integer"}),
                    _query("entry", "the topology file inside the package", {"type": "string"}),
                    _query("components", "the components it touches: A,B", {"type": "string"}),
                    _query("author", "who made it", {"type": "string"}),
                    _query("to", "the revision a rollback runs again", {"type": "integer"}),
                ],
                requestBody={
                    "required": False,
                    "content": {"application/octet-stream": {"schema": _ZIP}},
                },
                refusals=("400", "404", "409", "413"),
            ),
        },
        f"{t}/activate": {
            "post": _op("resume its spouts", "200", _json("its state"), parameters=[_NAME])
        },
        f"{t}/deactivate": {
            "post": _op("pause its spouts", "200", _json("its state"), parameters=[_NAME])
        },
        "/api/v1/nodes": {
            "get": _get("workers and agents, online or not", {"type": "array"}, topology=False)
        },
        "/api/v1/nodes/{id}": {
            "delete": _op(
                "forget an offline node that holds no containers",
                "200",
                _json("the forgotten node"),
                parameters=[
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                refusals=("404", "409"),
            )
        },
        "/api/v1/nodes/{id}/revoke": {
            "post": _op(
                "cut a node off: its certificate is refused from now on, everywhere",
                "200",
                _json("the revoked node"),
                parameters=[
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                refusals=("409",),
            )
        },
        "/api/v1/traffic": {
            "get": _get("bytes the master's gRPC server took and gave, per method", topology=False)
        },
        "/api/v1/tokens": {
            "get": _get("every token, without its secret", {"type": "array"}, topology=False),
            "post": _op(
                "create a token; its text is in the answer, this once",
                "201",
                _json("id, token, role, expires"),
                requestBody={
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "role": role,
                                    "ttl": {"type": "string", "description": "90s, 15m, 24h, 7d"},
                                    "description": {"type": "string"},
                                },
                                "required": ["role"],
                            }
                        }
                    },
                },
                refusals=("400", "409"),
            ),
        },
        "/api/v1/tokens/{id}": {
            "delete": _op(
                "revoke a token",
                "200",
                _json("the revoked token's id"),
                parameters=[
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                refusals=("404",),
            )
        },
    }


def openapi(version: str) -> dict[str, Any]:
    """The document, each operation with the role it needs (``x-role``)."""
    paths = _paths()
    for path, methods in paths.items():
        for method, op in methods.items():
            op["x-role"] = ACCESS.get((method.upper(), path), "none: refused")
            if op["x-role"] != PUBLIC:
                op["description"] = f"Needs a token with the {op['x-role']} role (or higher)."
    return {
        "openapi": "3.0.3",
        "info": {
            "title": "Headwater master",
            "version": version,
            "description": "The master's REST API. Every operation but this document needs "
            "Authorization: Bearer TOKEN (headwater token create; the first admin token is in "
            "the master's STATE/admin.token).",
        },
        "paths": paths,
        "components": {"securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}}},
        "security": [{"bearer": []}],
    }
