"""The model routes (``_models_http.py``) in the master's OpenAPI document (``_openapi.py``
merges them in): the registry's and the rollouts' paths, the register route, the answer of a
version's bytes, of either kind, and the body of a rollout request (its waves and guards)."""

from __future__ import annotations

from typing import Any

from headwater.common.models._rollout_guards import MAX_GUARDS
from headwater.common.models._rollout_waves import MAX_WAVES

from ._openapi_parts import answer as _json
from ._openapi_parts import binary_body
from ._openapi_parts import op as _op
from ._openapi_parts import query as _query
from ._rollout_checks import MAX_WATCH_S


def model_paths() -> dict[str, dict[str, Any]]:
    """The registry's and the rollouts' paths (``add_model_routes``)."""
    m = "/api/v1/models/{name}"
    name = {
        "name": "name",
        "in": "path",
        "required": True,
        "description": "the model's name",
        "schema": {"type": "string"},
    }
    target = {
        "topology": {"type": "string", "description": "the running topology"},
        "component": {"type": "string", "description": "its component that runs the model"},
    }
    rollout = rollout_schema(target)

    def body(schema: dict[str, Any]) -> dict[str, Any]:
        return {"required": True, "content": {"application/json": {"schema": schema}}}

    return {
        "/api/v1/models": {
            "get": _op(
                "every model with its latest version",
                "200",
                _json("every model with its latest version", {"type": "array"}),
                refusals=(),
            )
        },
        m: {
            "get": _op(
                "a model's versions, and which topologies and agents run which",
                "200",
                _json("versions and where they run"),
                parameters=[name],
                refusals=("404",),
            ),
            "post": _op(
                "upload an artifact: the model's next version",
                "201",
                _json("name, version, sha256"),
                parameters=[name],
                requestBody=binary_body(),
                refusals=("400", "413"),
            ),
        },
        f"{m}/{{version}}": {
            "get": _op(
                "a version's metadata, or with artifact=1 its bytes (an ONNX model's as "
                "application/octet-stream)",
                "200",
                artifact_answer(),
                parameters=[
                    name,
                    {
                        "name": "version",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    },
                    _query("artifact", "1: the artifact's bytes", {"type": "string"}),
                ],
                # 409: its bytes lost or altered; 503: the blob store did not answer
                refusals=("404", "409", "503"),
            )
        },
        f"{m}/rollouts": {
            "get": _op(
                "the model's rollouts, each step with its time",
                "200",
                _json("the rollouts", {"type": "array"}),
                parameters=[name],
                refusals=("404",),
            ),
            "post": _op(
                "roll a version out to a running component, canary first if asked",
                "202",
                _json("the rollout"),
                parameters=[name],
                requestBody=body(rollout),
                refusals=("400", "404", "409"),
            ),
        },
        f"{m}/rollback": {
            "post": _op(
                "return a component to the version it ran before the latest rollout",
                "202",
                _json("the rollback (a rollout)"),
                parameters=[name],
                requestBody=body(
                    {"type": "object", "properties": target, "required": list(target)}
                ),
                refusals=("400", "404", "409"),
            )
        },
    }


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


def rollout_schema(target: dict[str, Any]) -> dict[str, Any]:
    """The body of ``POST /api/v1/models/NAME/rollouts`` (``target``: topology, component)."""
    percent = {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 100}
    number_list = {"type": "array", "items": percent, "minItems": 1, "maxItems": MAX_WAVES}
    return {
        "type": "object",
        "properties": {
            "version": {
                "type": "integer",
                "minimum": 1,
                "maximum": 999_999_999,
                "description": "the version to run",
            },
            **target,
            "canary": {
                "type": "object",
                "additionalProperties": {"type": "string"},
                "minProperties": 1,
                "description": 'agents\' labels that take it first, e.g. {"site": "a"}',
            },
            "watch_s": {
                "type": "number",
                "minimum": 0,
                "maximum": MAX_WATCH_S,
                "description": "how long the canary and each wave are watched",
            },
            "max_anomaly_rate": {
                "type": "number",
                "minimum": 0,
                "maximum": 1,
                "description": "the JSON anomaly kind's bound (the guard anomalies/scored), 0 to 1",
            },
            "max_errors": {
                "type": "integer",
                "minimum": 0,
                "description": "errors it may make (errors<=N)",
            },
            "waves": {
                **number_list,
                "description": "cumulative percentages of the component's agents after the "
                "canary, growing, the last 100, e.g. [10, 50, 100] (default [100])",
            },
            "guards": {
                "type": "array",
                "items": {"type": "string"},
                "maxItems": MAX_GUARDS,
                "description": "EXPR<=BOUND, judged over each watch window's counter growth: "
                "EXPR a counter (errors, exceptions, dead_letters, executed, a user counter) "
                "or a ratio A/B of two, e.g. score_us/scored<=500, out_of_range/scored<=0.01",
            },
        },
        "required": ["version", "topology", "component"],
    }
