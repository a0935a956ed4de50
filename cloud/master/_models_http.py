"""The REST routes of the model registry (``_models.py``) and its rollouts (``_rollout.py``):

POST   /api/v1/models/NAME                        upload a JSON artifact: the next version
GET    /api/v1/models                             every model with its latest version
GET    /api/v1/models/NAME                        its versions and where they run
GET    /api/v1/models/NAME/VERSION[?artifact=1]   a version's metadata (or its bytes)
POST   /api/v1/models/NAME/rollouts               roll a version out: {"version", "topology",
                                                  "component", "canary", "watch_s",
                                                  "max_anomaly_rate", "max_errors",
                                                  "waves": [10, 50, 100],
                                                  "guards": ["score_us/scored<=500"]}
GET    /api/v1/models/NAME/rollouts               its rollouts, each step with its time
POST   /api/v1/models/NAME/rollback               back to the version before: {"topology",
                                                  "component"}
POST   /api/v1/models/NAME/versions[?meta=JSON]   register a model: its bytes as the body (an
                                                  ONNX file or a JSON anomaly document, told
                                                  apart by content); meta: a small JSON object
                                                  kept with it (dataset, data range, figures)

Who may call each: ``cloud/_access.py``. A registration's answer is ``{"name",
"version", "sha256", "kind"}`` (201); a model over its kind's bound, or metadata over its
own, is a 413; a model that is refused (not ONNX, truncated, a graph that does not load, a
load over the child's time or memory bound) a 400 with the reason. An ONNX model is checked
in a child process (``common/models/_onnx.py``), never in the master's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from headwater.common._exceptions import HeadwaterError
from headwater.common.models import JSON_KIND, MAX_ONNX_BYTES, model_kind
from headwater.common.models._rollout_guards import SYNTAX as GUARD_SYNTAX
from headwater.common.models._rollout_waves import waves_problem
from headwater.common.statemgr import StateError

from ._models import (
    MAX_MODEL_BYTES,
    ModelRefusedError,
    ModelRegistry,
    UnknownModelError,
    user_meta,
)
from ._rollout import RolloutError, Rollouts

_VERSION = re.compile(r"[1-9][0-9]{0,8}")
"""A model version in a path: 1 to 999999999, ASCII digits only."""
_Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


async def _json_body(request: web.Request) -> Any:
    """The request's JSON body; ValueError for one that is not JSON (or nested too deep)."""
    try:
        return await request.json()
    except RecursionError:
        raise ValueError("nested too deep") from None


async def _body(request: web.Request, limit: int) -> bytes | None:
    """The request's body, or None once it passes ``limit`` bytes."""
    if (request.content_length or 0) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_chunked(1 << 20):
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def add_model_register_route(app: web.Application, registry: ModelRegistry) -> None:
    """Add ``POST /api/v1/models/{name}/versions`` of ``registry`` to ``app``."""

    async def register(request: web.Request) -> web.Response:
        try:
            meta = user_meta(request.query["meta"]) if "meta" in request.query else None
        except ModelRefusedError as exc:
            return _error(413 if exc.too_large else 400, str(exc))
        data = await _body(request, MAX_ONNX_BYTES)
        if data is None:
            return _error(413, f"the model is over {MAX_ONNX_BYTES} bytes, the limit")
        try:
            result = await registry.register(request.match_info["name"], data, meta)
        except ModelRefusedError as exc:
            return _error(413 if exc.too_large else 400, str(exc))
        return web.json_response(result, status=201)

    app.router.add_post("/api/v1/models/{name}/versions", register)


def add_model_routes(app: web.Application, registry: ModelRegistry, rollouts: Rollouts) -> None:
    """Add the registry's and the rollouts' routes (the module docstring's table) to ``app``."""
    upload, listing, show, version = _registry_handlers(registry, rollouts)
    start = _rollout_start_handler(rollouts)
    history, rollback = _rollout_handlers(registry, rollouts)
    app.router.add_get("/api/v1/models", listing)
    app.router.add_post("/api/v1/models/{name}", upload)
    app.router.add_get("/api/v1/models/{name}", show)
    app.router.add_get("/api/v1/models/{name}/rollouts", history)
    app.router.add_post("/api/v1/models/{name}/rollouts", start)
    app.router.add_post("/api/v1/models/{name}/rollback", rollback)
    app.router.add_get("/api/v1/models/{name}/{version}", version)
    add_model_register_route(app, registry)


def _registry_handlers(
    registry: ModelRegistry, rollouts: Rollouts
) -> tuple[_Handler, _Handler, _Handler, _Handler]:
    """The registry's handlers: upload, listing, show, version."""

    async def upload(request: web.Request) -> web.Response:
        if (request.content_length or 0) > MAX_MODEL_BYTES:
            return _error(413, f"the artifact is over {MAX_MODEL_BYTES} bytes")
        data = await request.read()
        try:
            result = await registry.upload(request.match_info["name"], data)
        except ModelRefusedError as exc:
            return _error(413 if exc.too_large else 400, str(exc))
        return web.json_response(result, status=201)

    async def listing(request: web.Request) -> web.Response:
        return web.json_response(registry.names())

    async def show(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            versions = registry.versions(name)
        except (ModelRefusedError, UnknownModelError) as exc:  # a bad name names no model
            return _error(404, str(exc))
        return web.json_response(
            {"name": name, "versions": versions, "running": rollouts.running(name)}
        )

    async def version(request: web.Request) -> web.StreamResponse:
        name, text = request.match_info["name"], request.match_info["version"]
        if not _VERSION.fullmatch(text):
            return _error(404, f"no version {text[:40]!r}: versions are numbers (1, 2, ...)")
        try:
            if request.query.get("artifact") not in (None, "", "0"):
                data = await registry.artifact(name, int(text))
                json_kind = model_kind(data) == JSON_KIND
                media = "application/json" if json_kind else "application/octet-stream"
                return web.Response(body=data, content_type=media)
            return web.json_response(registry.meta(name, int(text)))
        except (ModelRefusedError, UnknownModelError) as exc:
            return _error(404, str(exc))
        except StateError as exc:  # the blob store did not answer: try again
            return _error(503, str(exc))
        except HeadwaterError as exc:  # registered, but its bytes are lost or altered
            return _error(409, str(exc))

    return upload, listing, show, version


async def _rollout_body(request: web.Request) -> dict[str, Any] | web.Response:
    """A rollout's or rollback's JSON body, naming its topology and component; else a 400."""
    try:
        body = await _json_body(request)
    except ValueError:
        return _error(400, "send a JSON object")
    if not isinstance(body, dict):
        return _error(400, "send a JSON object")
    for key in ("topology", "component"):
        if not isinstance(body.get(key), str) or not body[key]:
            return _error(400, f"{key} (a string) is needed")
    return body


def _rollout_start_handler(rollouts: Rollouts) -> _Handler:
    """The handler that starts a rollout."""

    async def start(request: web.Request) -> web.Response:
        body = await _rollout_body(request)
        if isinstance(body, web.Response):
            return body
        version, canary = body.get("version"), body.get("canary")
        numbers = [body.get(k, 0) for k in ("watch_s", "max_anomaly_rate", "max_errors")]
        if not isinstance(version, int) or isinstance(version, bool) or not 0 < version < 10**9:
            return _error(400, "version must be a version number (1, 2, ...)")
        if canary is not None and (
            not isinstance(canary, dict)
            or not canary
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in canary.items())
        ):
            return _error(
                400, 'canary must be a non-empty object of label: value, e.g. {"site": "a"}'
            )
        if not all(isinstance(n, int | float) and not isinstance(n, bool) for n in numbers):
            return _error(400, "watch_s, max_anomaly_rate and max_errors are numbers")
        if not float(numbers[2]).is_integer():
            return _error(400, "max_errors is a whole number")
        waves, guards = body.get("waves", [100]), body.get("guards", [])
        problem = waves_problem(waves)
        if problem is not None:
            return _error(400, problem)
        if not isinstance(guards, list) or not all(isinstance(g, str) for g in guards):
            return _error(400, f"guards must be a list of strings: {GUARD_SYNTAX}")
        try:
            view = rollouts.start(
                request.match_info["name"],
                version,
                body["topology"],
                body["component"],
                canary,
                float(body.get("watch_s", 30.0)),
                float(body.get("max_anomaly_rate", 0.2)),
                int(body.get("max_errors", 0)),
                [float(w) for w in waves],
                guards,
            )
        except RolloutError as exc:
            return _error(exc.status, str(exc))
        except UnknownModelError as exc:
            return _error(404, str(exc))
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _error(400, str(exc))
        return web.json_response(view, status=202)

    return start


def _rollout_handlers(registry: ModelRegistry, rollouts: Rollouts) -> tuple[_Handler, _Handler]:
    """The rollouts' other handlers: history, rollback."""

    async def history(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            registry.versions(name)
        except (ModelRefusedError, UnknownModelError) as exc:
            return _error(404, str(exc))
        return web.json_response(rollouts.of(name))

    async def rollback(request: web.Request) -> web.Response:
        body = await _rollout_body(request)
        if isinstance(body, web.Response):
            return body
        try:
            view = rollouts.rollback(
                request.match_info["name"], body["topology"], body["component"]
            )
        except RolloutError as exc:
            return _error(exc.status, str(exc))
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _error(400, str(exc))
        return web.json_response(view, status=202)

    return history, rollback
