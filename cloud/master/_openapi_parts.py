"""The pieces the master's OpenAPI document is built of (``_openapi.py``, and
``_spark_openapi.py`` for the Spark job routes)."""

from __future__ import annotations

from typing import Any

ERROR = {
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


def answer(description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": schema or {"type": "object"}}},
    }


def query(name: str, description: str, schema: dict[str, Any], required: bool = False) -> Any:
    return {
        "name": name,
        "in": "query",
        "required": required,
        "description": description,
        "schema": schema,
    }


def op(summary: str, ok: str, answer: dict[str, Any], **extra: Any) -> dict[str, Any]:
    responses: dict[str, Any] = {ok: answer, "401": ERROR, "403": ERROR}
    for status in extra.pop("refusals", ("400", "404")):
        responses[status] = ERROR
    return {"summary": summary, "responses": responses, **extra}


def binary_body() -> dict[str, Any]:
    """A required request body of raw bytes (a model's file)."""
    binary = {"type": "string", "format": "binary"}
    return {"required": True, "content": {"application/octet-stream": {"schema": binary}}}


NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "the topology's name",
    "schema": {"type": "string"},
}
"""The path parameter of a topology's routes."""


def get(summary: str, schema: dict[str, Any] | None = None, topology: bool = True) -> Any:
    extra = {"parameters": [NAME]} if topology else {"refusals": ()}
    return op(summary, "200", answer(summary, schema), **extra)


def move_path(name: dict[str, Any]) -> dict[str, Any]:
    """``POST .../move`` (``_moves.py``); ``name``: the topology's path parameter."""
    move = op(
        "place running components elsewhere, edge <-> cloud (issue 37), live: checked, and "
        "previewed with dry_run=1; a component without keyed state whose edge input no other "
        "cloud component reads switches (the cloud, then each agent, at a barrier of its own); "
        "keyed state, an input the cloud also reads, or a component its code places on the "
        "edge at more than one task going to the cloud, is not built yet (501)",
        "202",
        answer("the revision record"),
        parameters=[
            name,
            query("components", "the components to move: A,B", {"type": "string"}, True),
            query(
                "to",
                "where: cloud, edge (every agent) or edge(LABEL=VALUE,...)",
                {"type": "string"},
                True,
            ),
            query("base", "the revision it was made against", {"type": "integer"}, True),
            query("author", "who made it", {"type": "string"}),
            query("dry_run", "1: validate and answer the preview", {"type": "string"}),
        ],
        refusals=("400", "404", "409", "501"),
    )
    move["responses"]["200"] = answer(
        "the preview of the move (dry_run=1): nothing changed; the plan diff, and not_built: "
        "why applying it would be a 501, or null"
    )
    return {"post": move}
