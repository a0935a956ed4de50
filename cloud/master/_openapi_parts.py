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
