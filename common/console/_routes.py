"""The console's routes, for any server that shows it: its files, ``whoami``, the stream.

    GET /                           the page (public: the login form loads without a token)
    GET /console/FILE               its stylesheet and JavaScript modules (public)
    GET /api/v1/whoami              the caller's role and token id, and whether this
                                    server makes live edits, serves logs, runs Spark
                                    jobs and keeps a history for the charts (viewer)
    GET /api/v1/events[?topology=NAME]   a text/event-stream of snapshots, one a second (viewer)

Served by the master (``cloud/console/``, tokens checked), by the topology master
of ``headwater run``, and by an agent's status port (``edge/_console.py``: loopback,
no credentials, as the rest of that port). The stream is read with ``fetch()``
and a stream reader, not ``EventSource``: ``EventSource`` cannot send an
``Authorization`` header, and a token in the URL would land in logs and
history. Each event is ``event: snapshot`` with the JSON of a snapshot (built
once for every stream that watches the same topology in that tick); the caller
is checked again before each one, so a revoked or expired token ends its
streams within a second (a last ``event: end`` says why). Streams are bounded
per token and in all, a 429 beyond, so that a viewer cannot make the server
build snapshots without end.
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ._static import HEADERS, answer, static_files

Snapshots = Callable[[str | None], dict[str, Any]]
Caller = Callable[[web.Request], "tuple[str, str | None] | str"]

MAX_STREAMS_PER_TOKEN = 4
MAX_STREAMS = 32
INTERVAL_S = 1.0
WRITE_TIMEOUT_S = 5.0
"""A reader that has not taken an event within this (its buffers full) loses its stream:
otherwise it would hold its slot, even past its token's revocation, for as long as it
keeps the connection open."""
ANONYMOUS = "anonymous"  # the stream key of a caller without a token (no tokens asked)


def add_console(
    app: web.Application,
    snapshot_of: Snapshots,
    caller: Caller,
    edits: bool,
    insecure: bool,
    logs: bool = False,
    spark: bool = False,
    history: bool = False,
) -> None:
    """Add the routes above to ``app``: ``snapshot_of(topology)`` builds a snapshot,
    ``caller(request)`` says who asks ((role, token id), or why its token no longer holds;
    the middleware of ``cloud/_access.py`` has let the request in), ``edits`` whether this
    server makes live edits, ``insecure`` whether it asks no token at all, ``logs`` whether
    it serves containers' logs (``/api/v1/topologies/NAME/containers/C/logs``, operator),
    ``spark`` whether it runs Spark jobs (its snapshots then carry ``spark_jobs``),
    ``history`` whether it keeps the history the charts draw (``_history_http.py``)."""
    files = static_files()
    streams: Counter[str] = Counter()
    closing = asyncio.Event()  # the server shuts down: end every stream (the page reconnects)

    async def close_streams(app: web.Application) -> None:
        closing.set()

    async def index(request: web.Request) -> web.Response:
        return answer("index.html", files["index.html"])

    async def asset(request: web.Request) -> web.Response:
        name = request.match_info["file"]
        if name == "index.html" or name not in files:
            return web.json_response(
                {"error": f"the console has no file {name[:60]!r}"}, status=404
            )
        return answer(name, files[name])

    async def whoami(request: web.Request) -> web.Response:
        who = caller(request)
        if isinstance(who, str):  # revoked between the middleware and here
            return web.json_response({"error": who}, status=401)
        return web.json_response(
            {
                "role": who[0],
                "id": who[1],
                "insecure": insecure,
                "edits": edits,
                "logs": logs,
                "spark": spark,
                "history": history,
            }
        )

    events = _events_handler(snapshot_of, caller, streams, closing)

    app.on_shutdown.append(close_streams)
    app.router.add_get("/", index)
    app.router.add_get("/console/{file}", asset)
    app.router.add_get("/api/v1/whoami", whoami)
    app.router.add_get("/api/v1/events", events)


def _events_handler(
    snapshot_of: Snapshots, caller: Caller, streams: Counter[str], closing: asyncio.Event
) -> Callable[[web.Request], Awaitable[web.StreamResponse]]:
    """The handler of ``/api/v1/events``: ``streams`` counts the open ones per token,
    ``closing`` is set when the server shuts down."""
    built: dict[str | None, tuple[float, bytes]] = {}  # topology -> (when, its snapshot event)

    def event_of(topology: str | None) -> bytes:
        """The snapshot event for ``topology``, built at most once per half interval however
        many streams ask: the master's cost follows the topologies watched, not the tabs."""
        now = asyncio.get_running_loop().time()
        cached = built.get(topology)
        if cached is not None and now - cached[0] < INTERVAL_S / 2:
            return cached[1]
        for key in [k for k, (when, _) in built.items() if now - when >= INTERVAL_S]:
            del built[key]  # keys come from the query: keep only the ones still asked for
        data = _event("snapshot", snapshot_of(topology))
        built[topology] = (now, data)
        return data

    async def events(request: web.Request) -> web.StreamResponse:
        who = caller(request)
        if isinstance(who, str):
            return web.json_response({"error": who}, status=401)
        key = who[1] or ANONYMOUS
        topology = request.query.get("topology") or None
        if streams[key] >= MAX_STREAMS_PER_TOKEN:
            return web.json_response(
                {
                    "error": f"this token has {streams[key]} event streams open already; "
                    "close a console tab"
                },
                status=429,
            )
        if sum(streams.values()) >= MAX_STREAMS:
            return web.json_response(
                {"error": f"this server serves {MAX_STREAMS} event streams already"}, status=429
            )
        streams[key] += 1
        try:
            resp = web.StreamResponse(
                headers={
                    "Content-Type": "text/event-stream",
                    "Cache-Control": "no-store",
                    "X-Content-Type-Options": HEADERS["X-Content-Type-Options"],
                }
            )
            await resp.prepare(request)
            while True:
                still = caller(request)
                if isinstance(still, str):
                    async with asyncio.timeout(1.0):
                        await resp.write(_event("end", {"error": still}))
                    break
                async with asyncio.timeout(WRITE_TIMEOUT_S):
                    await resp.write(event_of(topology))
                try:  # a stream never ends by itself: it must not hold the shutdown up
                    async with asyncio.timeout(INTERVAL_S):
                        await closing.wait()
                    break
                except TimeoutError:
                    pass
        except (ConnectionResetError, ConnectionError):
            pass  # the page went away
        except TimeoutError:  # a reader that does not read: drop it
            if request.transport is not None:
                request.transport.abort()
        finally:
            streams[key] -= 1
            if not streams[key]:
                del streams[key]
        return resp

    return events


def _event(kind: str, data: object) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
