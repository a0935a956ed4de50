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
from ._console_openapi import console_paths
from ._health_http import health_paths
from ._models_openapi import model_paths, model_register_paths
from ._openapi_parts import NAME as _NAME
from ._openapi_parts import answer as _json
from ._openapi_parts import get as _get
from ._openapi_parts import move_path
from ._openapi_parts import op as _op
from ._openapi_parts import query as _query
from ._spark_openapi import spark_job_paths

_ZIP = {"type": "string", "format": "binary", "description": "the package: a zip"}
_FILES = {
    "type": "object",
    "description": "the base revision's package with these files changed (null: deleted)",
    "properties": {
        "files": {
            "type": "object",
            "additionalProperties": {"type": ["string", "null"]},
        }
    },
    "required": ["files"],
}


def _paths() -> dict[str, dict[str, Any]]:
    t = "/api/v1/topologies/{name}"
    role = {"type": "string", "enum": ["viewer", "operator", "admin", "agent", "worker"]}
    paths = {
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
            "get": _get(
                "a topology's summary: state, containers, components (the cloud subgraph's), "
                "edge (the edge subgraph: components, selectors, agents, uplink boundary), "
                "errors (exceptions + dead_letters + failed, each given too, summed over the "
                "cloud's components and every agent's edge components, as the console's DAG)"
            ),
            "delete": _op(
                "kill a topology", "200", _json("the killed topology"), parameters=[_NAME]
            ),
        },
        f"{t}/metrics": {"get": _get("metrics per component, task and stream manager")},
        f"{t}/plan": {"get": _get("the physical plan, with edge as in the summary")},
        f"{t}/checkpoints": {"get": _get("exactly-once checkpoints")},
        f"{t}/exceptions": {"get": _get("errors reported by instances", {"type": "array"})},
        f"{t}/move": move_path(_NAME),
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
                    _query(
                        "parallelism",
                        "a replace without a body: the running code with these components' "
                        "parallelism, A:N,B:M",
                        {"type": "string"},
                    ),
                    _query(
                        "dry_run",
                        "1: validate and answer the preview (the diff, what keeps its state, "
                        "the domains that switch) without applying anything",
                        {"type": "string", "enum": ["0", "1"]},
                    ),
                ],
                requestBody={
                    "required": False,
                    "content": {
                        "application/octet-stream": {"schema": _ZIP},
                        "application/json": {"schema": _FILES},
                    },
                },
                refusals=("400", "404", "409", "413"),
            ),
        },
        f"{t}/files": {
            "get": _op(
                "a revision's package (the current one's by default): its files (text up to "
                "256 KiB), where each component's code is (defined), and the steps the "
                "console may attach (palette)",
                "200",
                _json("the files"),
                parameters=[_NAME, _query("revision", "a revision", {"type": "integer"})],
            )
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
        "/api/v1/leader": {
            "get": _get(
                "the leading master: role, leader epoch and addresses (a standby redirects the "
                "rest of the API to it)",
                {"type": "object"},
                topology=False,
            )
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
        **_log_paths(t),
        "/api/v1/traffic": {
            "get": _get("bytes the master's gRPC server took and gave, per method", topology=False)
        },
        "/metrics": {
            "get": _op(
                "the cluster's metrics, for Prometheus (topologies, components, tasks, stream "
                "managers, checkpoints, nodes, rollouts)",
                "200",
                {
                    "description": "the Prometheus text format, version 0.0.4",
                    "content": {"text/plain": {"schema": {"type": "string"}}},
                },
                refusals=(),
            )
        },
        "/api/v1/tokens": {
            "get": _get(
                "every token, without its secret; a Spark job's own (role job, minted when it "
                "was submitted with registers) with its scope, the models it may register",
                {"type": "array"},
                topology=False,
            ),
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
                                    "description": {"type": "string", "maxLength": 200},
                                },
                                "required": ["role"],
                            }
                        }
                    },
                },
                refusals=("400", "409"),
            ),
        },
        **model_paths(),
        **health_paths(_NAME),
        "/api/v1/tokens/{id}": {
            "delete": _op(
                "revoke a token; the last admin token is kept (409): create another first",
                "200",
                _json("the revoked token's id"),
                parameters=[
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                refusals=("404", "409"),
            )
        },
    }
    edit = paths[f"{t}/revisions"]["post"]
    edit["responses"]["200"] = _json("the preview of the edit (dry_run=1): nothing changed")
    return paths


def _log_paths(t: str) -> dict[str, dict[str, Any]]:
    tail = _query(
        "tail",
        "the last N lines of each log (1 to 10000; default 200)",
        {"type": "integer", "minimum": 1, "maximum": 10000},
    )
    file = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "task-T.log: instance T's log"},
            "path": {"type": "string", "description": "where it is on the worker's machine"},
            "text": {"type": "string"},
            "truncated": {"type": "boolean", "description": "the byte cap cut lines asked for"},
        },
    }
    view = {
        "type": "object",
        "description": "under the Docker scheduler: worker_log, docker_container and status; "
        "under the worker scheduler: scheduler (worker), the instances' logs and truncation",
        "properties": {
            "topology": {"type": "string"},
            "container": {"type": "integer"},
            "docker_container": {"type": "string", "description": "its name, hostname, node id"},
            "node": {"type": "string"},
            "scheduler": {"type": "string", "enum": ["worker"]},
            "status": {"type": "string", "description": "the Docker container's state"},
            "tail": {"type": "integer"},
            "worker_log": {"type": "string", "description": "the worker's Docker log"},
            "container_log": {"type": "string", "description": "the container's log file"},
            "container_log_path": {"type": "string"},
            "container_log_truncated": {"type": "boolean"},
            "instance_logs": {"type": "array", "items": file},
        },
    }
    ident = {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
    number = {"name": "container", "in": "path", "required": True, "schema": {"type": "string"}}
    note = (
        " (Docker scheduler: through the Docker API; worker scheduler: asked of the worker "
        "running it, up to 256 KiB of each file); 409 when no node runs it yet or its node is "
        "offline, 502 when the worker cannot read them, 504 when it does not answer in 5 s"
    )
    refusals = ("400", "404", "409", "502", "503", "504")
    return {
        f"{t}/logs": {
            "get": _op(
                "the last lines of the logs of every container of a topology" + note,
                "200",
                _json("one log view per container", {"type": "array", "items": view}),
                parameters=[_NAME, tail],
                refusals=refusals,
            )
        },
        f"{t}/containers/{{container}}/logs": {
            "get": _op(
                "one container's logs: its own log file, then the worker's Docker log or its "
                "instances' log files" + note,
                "200",
                _json("the log view", view),
                parameters=[_NAME, number, tail],
                refusals=refusals,
            )
        },
        "/api/v1/nodes/{id}/logs": {
            "get": _op(
                "a Docker-scheduled node's logs (its container's); 409 for a worker the master "
                "did not start (the answer names its containers)",
                "200",
                _json("the log view", view),
                parameters=[ident, tail],
                refusals=("400", "404", "409"),
            )
        },
    }


def openapi(version: str) -> dict[str, Any]:
    """The document, each operation with the role it needs (``x-role``)."""
    paths = {**_paths(), **console_paths(), **spark_job_paths(), **model_register_paths()}
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
