"""The Spark job routes (``_spark_http.py``) in the master's OpenAPI document
(``_openapi.py`` merges them in)."""

from __future__ import annotations

from typing import Any

from ._openapi_parts import answer as _json
from ._openapi_parts import op as _op
from ._openapi_parts import query as _query

_JOB_NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "the Spark job's name",
    "schema": {"type": "string"},
}
_LAST_RUN = {
    "type": "object",
    "nullable": True,
    "properties": {
        "started": {"type": "number"},
        "ended": {"type": "number", "nullable": True},
        "ok": {"type": "boolean"},
        "rows_read": {"type": "integer"},
        "rows_written": {"type": "integer"},
        "error": {"type": "string"},
    },
}
JOB_VIEW = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "entry": {"type": "string", "description": "the job file (.py job, .toml rollup spec)"},
        "package": {"type": "string"},
        "mode": {"type": "string", "enum": ["once", "every", "continuous"]},
        "every_s": {"type": "number"},
        "spark_master": {"type": "string", "description": "local (embedded) or spark://H:P"},
        "params": {"type": "object", "additionalProperties": {"type": "string"}},
        "landing": {"type": "string", "description": "empty: the worker's own"},
        "warehouse": {"type": "string", "description": "empty: the worker's own"},
        "registers": {
            "type": "array",
            "items": {"type": "string"},
            "description": "the models the job may register (ctx.register), with its own token",
        },
        "submitted": {"type": "number"},
        "node": {"type": "string", "description": "the worker running it (empty: none yet)"},
        "state": {
            "type": "string",
            "description": "the driver's: starting, running, waiting, succeeded, failed, "
            "stopped; or waiting for a worker, worker W offline",
        },
        "runs": {"type": "integer"},
        "last_run": _LAST_RUN,
        "rows_read": {"type": "integer", "description": "of the last run"},
        "rows_written": {"type": "integer", "description": "of the last run"},
        "last_error": {"type": "string"},
        "restarts": {"type": "integer", "description": "driver restarts by its worker"},
        "crash_loop": {"type": "string", "description": "not empty while crash-looping"},
        "updated": {"type": "number"},
    },
}


def spark_job_paths() -> dict[str, dict[str, Any]]:
    jobs, job = "/api/v1/spark/jobs", "/api/v1/spark/jobs/{name}"
    text = {"type": "string"}
    body = {"type": "string", "format": "binary", "description": "the job file's bytes"}
    return {
        jobs: {
            "get": _op(
                "every Spark job: state, node, mode, last run, rows, last error, crash loop",
                "200",
                _json("the jobs", {"type": "array", "items": JOB_VIEW}),
                refusals=(),
            ),
            "post": _op(
                "submit a Spark job (a .py file defining run(spark, ctx), a .toml rollup spec, "
                "or a .zip package with entry naming its job file); the file is checked in a "
                "child process first",
                "201",
                _json("the job", JOB_VIEW),
                parameters=[
                    _query("file", "the file's name: JOB.py, SPEC.toml or PKG.zip", text, True),
                    _query("name", "the job's name (default: the file's stem)", text),
                    _query("entry", "a zip package's job file", text),
                    _query(
                        "mode",
                        "once (default), every every_s seconds, or continuous",
                        {"type": "string", "enum": ["once", "every", "continuous"]},
                    ),
                    _query("every_s", "mode every: seconds between runs", {"type": "number"}),
                    _query("spark_master", "spark://HOST:PORT (default: local mode)", text),
                    _query(
                        "param",
                        "KEY=VALUE, repeated: the job's ctx.params",
                        {"type": "array", "items": text},
                    ),
                    _query("landing", "the landing folder on the workers", text),
                    _query("warehouse", "the warehouse folder on the workers", text),
                    _query(
                        "registers",
                        "MODEL, repeated (at most 16): the models the job may register "
                        "(ctx.register); the master mints the job a token that may register "
                        "versions of those models only, revoked when the job is killed",
                        {"type": "array", "items": text},
                    ),
                ],
                requestBody={"content": {"application/octet-stream": {"schema": body}}},
                refusals=("400", "413"),
            ),
        },
        job: {
            "get": _op("one Spark job", "200", _json("the job", JOB_VIEW), parameters=[_JOB_NAME]),
            "delete": _op(
                "kill a Spark job: its driver is stopped, its record removed",
                "200",
                _json("the killed job"),
                parameters=[_JOB_NAME],
            ),
        },
        f"{job}/logs": {
            "get": {
                **_op(
                    "the last lines of the job's driver log, asked of the worker running it; "
                    "409 when no worker runs it or its worker is offline",
                    "200",
                    _json(
                        "the driver's log",
                        {
                            "type": "object",
                            "properties": {
                                "name": text,
                                "node": text,
                                "tail": {"type": "integer"},
                                "driver_log": text,
                                "driver_log_path": text,
                                "driver_log_truncated": {"type": "boolean"},
                            },
                        },
                    ),
                    parameters=[
                        _JOB_NAME,
                        _query(
                            "tail",
                            "the last N lines (1 to 10000; default 200)",
                            {"type": "integer", "minimum": 1, "maximum": 10000},
                        ),
                    ],
                    refusals=("400", "404", "409", "502", "503", "504"),
                ),
            }
        },
    }
