"""The model register route (``_models_http.py``) in the master's OpenAPI document
(``_openapi.py`` merges it in), and the answer of a version's bytes, of either kind."""

from __future__ import annotations

from typing import Any

from ._openapi_parts import answer as _json
from ._openapi_parts import binary_body
from ._openapi_parts import op as _op
from ._openapi_parts import query as _query


def model_register_paths() -> dict[str, dict[str, Any]]:
    text = {"type": "string"}
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "description": "the model's name",
        "schema": text,
    }
    registered = {
        "type": "object",
        "properties": {
            "name": text,
            "version": {"type": "integer"},
            "sha256": text,
            "kind": {"type": "string", "description": "onnx/1, or the JSON document's kind"},
        },
    }
    return {
        "/api/v1/models/{name}/versions": {
            "post": _op(
                "register a model of any kind as the model's next version: an ONNX file "
                "(checked in a child process bounded in time and memory; its inputs and outputs "
                "go in the version's metadata) or a JSON anomaly document",
                "201",
                _json("name, version, sha256, kind", registered),
                parameters=[
                    name,
                    _query(
                        "meta",
                        "a JSON object kept with the version (dataset, data range, evaluation "
                        "figures), at most 2048 bytes (URL-encoded, it fits in a request line)",
                        text,
                    ),
                ],
                requestBody=binary_body(),
                refusals=("400", "413"),
            )
        }
    }


def artifact_answer() -> dict[str, Any]:
    """``GET /api/v1/models/NAME/VERSION``: metadata, or a JSON artifact, or ONNX bytes."""
    answer = _json("the metadata (or the artifact)")
    answer["content"]["application/octet-stream"] = {
        "schema": {"type": "string", "format": "binary"}
    }
    return answer
