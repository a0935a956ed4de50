"""The master's REST route that registers a model of any kind (``_models.py``):

POST   /api/v1/models/NAME/versions[?meta=JSON]   register a model: its bytes as the body (an
                                                  ONNX file or a JSON anomaly document, told
                                                  apart by content); meta: a small JSON object
                                                  kept with it (dataset, data range, figures)

Admins only (``cloud/_access.py``). The answer is ``{"name", "version", "sha256", "kind"}``
(201); a model over its kind's bound, or metadata over its own, is a 413; a model that is
refused (not ONNX, truncated, a graph that does not load, a load over the child's time or
memory bound) a 400 with the reason. An ONNX model is checked in a child process
(``common/models/_onnx.py``), never in the master's.
"""

from __future__ import annotations

from aiohttp import web

from headwater.common.models import MAX_ONNX_BYTES

from ._models import ModelRefusedError, ModelRegistry, user_meta


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


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
