"""The web console's routes in the master's OpenAPI document (``_openapi.py``): its page and
files, ``whoami``, the charts' history and the event stream (``cloud/console/``)."""

from __future__ import annotations

from typing import Any

from ._openapi_parts import ERROR as _ERROR
from ._openapi_parts import NAME as _NAME
from ._openapi_parts import answer as _json
from ._openapi_parts import get as _get
from ._openapi_parts import op as _op
from ._openapi_parts import query as _query


def console_paths() -> dict[str, dict[str, Any]]:
    """The web console's page, files and the two routes made for it (cloud/console/)."""

    def page(summary: str, types: tuple[str, ...]) -> dict[str, Any]:
        content = {t: {"schema": {"type": "string"}} for t in types}
        return {
            "summary": summary,
            "security": [],
            "responses": {"200": {"description": summary, "content": content}, "404": _ERROR},
        }

    file = {
        "name": "file",
        "in": "path",
        "required": True,
        "description": "a file of the console: console.css, main.js, ...",
        "schema": {"type": "string"},
    }
    stream = {"text/event-stream": {"schema": {"type": "string"}}}
    return {
        "/": {"get": page("the web console", ("text/html",))},
        "/console/{file}": {
            "get": {
                **page("a file of the web console", ("text/css", "text/javascript")),
                "parameters": [file],
            }
        },
        "/api/v1/whoami": {
            "get": _get(
                "the caller's role and token id (insecure: true on a master run --insecure), "
                "and whether this server makes live edits (edits), serves logs (logs), runs "
                "Spark jobs (spark) and keeps the charts' history (history)",
                topology=False,
            )
        },
        "/api/v1/topologies/{name}/history": {
            "get": _op(
                "the topology's recent history for the console's charts: per component (and "
                "per cloud task with tasks=1) points of rates per second (executed, emitted, "
                "backpressure_ms, dead_letters, exceptions: differentiated from the counters, "
                "a counter that starts again from 0 counted from there) and gauges "
                "(latency_us, pending), each point's time t in epoch seconds, at most 150 "
                "points a series (fewer past 20,000 in the answer); mean: the rates over the "
                "whole window. The master keeps 15 minutes, a sample every 2 s",
                "200",
                _json("the series by component (and task)"),
                parameters=[
                    _NAME,
                    _query(
                        "window",
                        "how many seconds back (1 to 900; default 300)",
                        {"type": "number", "minimum": 1, "maximum": 900},
                    ),
                    _query("component", "only this component's series", {"type": "string"}),
                    _query(
                        "tasks",
                        "1: the cloud tasks' series too",
                        {"type": "string", "enum": ["0", "1", "true", "false"]},
                    ),
                ],
            )
        },
        "/api/v1/events": {
            "get": _op(
                "snapshots for the console, one a second, as server-sent events",
                "200",
                {"description": "event: snapshot, data: JSON", "content": stream},
                parameters=[
                    _query("topology", "also the detail of this topology", {"type": "string"})
                ],
                refusals=("429",),
            )
        },
    }
