"""The history's route, and its sampling loop tied to the server's life.

    GET /api/v1/topologies/NAME/history?window=SECONDS[&component=C][&tasks=1]   (viewer)

Served by the master and by the topology master of ``headwater run``
(``_history_query.series_view`` says what it answers). ``window``: 1 to the history's
length (``WINDOW_S``: 900), 300 if not given (or the whole history if shorter);
``component``: one component's series only; ``tasks=1``: the cloud tasks' series too.
A bad value is a 400 saying what to give; an unknown topology or component a 404 naming
the known ones.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator

from aiohttp import web

from ._history import History
from ._history_query import known_components, series_view

DEFAULT_WINDOW_S = 300.0
_TRUE = {"1", "true", "yes"}
_FALSE = {"", "0", "false", "no"}


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def add_history_routes(app: web.Application, history: History) -> None:
    """Add the route above to ``app``, and run ``history``'s loop while ``app`` serves."""

    async def sampling(app: web.Application) -> AsyncIterator[None]:
        task = asyncio.get_running_loop().create_task(history.run())
        yield
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    async def route(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        q = request.query
        longest = history.window_s
        try:
            window = float(q.get("window", min(DEFAULT_WINDOW_S, longest)))
        except ValueError:
            window = math.nan
        if not (1 <= window <= longest):  # NaN and infinities too
            return _error(
                400,
                f"window must be a number of seconds from 1 to {longest:g} (the history's "
                f"length), e.g. ?window={min(DEFAULT_WINDOW_S, longest):g}",
            )
        tasks = q.get("tasks", "").lower()
        if tasks not in _TRUE | _FALSE:
            return _error(400, "tasks must be 1 (the tasks' series too) or 0")
        if name not in history.topologies():
            known = ", ".join(sorted(history.topologies())) or "none"
            return _error(404, f"no topology named {name[:60]!r} (running: {known})")
        component = q.get("component") or None
        names = known_components(history, name)
        if component is not None and component not in names:
            return _error(
                404,
                f"{name} has no component {component[:60]!r}; give one of: "
                f"{', '.join(names) or 'none yet (the history has no sample of it)'}",
            )
        view = series_view(history, name, window, component, tasks in _TRUE)
        if view is None:  # running, not sampled yet: an empty history, not an error
            view = {"topology": name, "window_s": window, "components": {}, "tasks": {}}
        return web.json_response(view)

    app.cleanup_ctx.append(sampling)
    app.router.add_get("/api/v1/topologies/{name}/history", route)
