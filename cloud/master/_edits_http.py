"""The master's REST routes of live edits (``_edits.py``)::

    POST /api/v1/topologies/NAME/revisions?action=attach|replace|remove|rollback&base=REV
         [&entry=FILE][&components=A,B][&author=WHO][&to=REV]   edit it live: a zip body,
         [&parallelism=A:N,B:M]     none (a remove, a rollback, a replace with parallelism),
         [&dry_run=1]               or JSON {"files": {"PATH": "new text" | null}}: the base
                                    revision's package with those files changed; dry_run:
                                    validate and answer the preview, change nothing
    GET  /api/v1/topologies/NAME/files[?revision=R]   a revision's package: its files, where
                                    each component's code is, the palette of attachable steps

A refusal is a 400 (413 for a package over a bound), a stale base a 409 with ``current``,
an unknown topology a 404; each with ``{"error": REASON}``.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from headwater.common._exceptions import HeadwaterError, PackageRefusedError
from headwater.common.control._revisions import EditError, StaleRevisionError
from headwater.common.statemgr import StateError

from ._master import Master, topology_name_problem


def _error(status: int, reason: str) -> web.Response:
    return web.json_response({"error": reason}, status=status)


def _refused(exc: HeadwaterError) -> web.Response:
    """A refused edit: 413 for a package over a bound, else 400."""
    too_large = isinstance(exc, PackageRefusedError) and exc.too_large
    return _error(413 if too_large else 400, str(exc))


def _parallelism(text: str) -> dict[str, int] | None:
    """``?parallelism=A:2,B:3`` as {component: instances}; a 400 for anything else."""
    if not text:
        return None
    out: dict[str, int] = {}
    for pair in text.split(","):
        name, sep, n = pair.partition(":")
        if not sep or not name or not n.isascii() or not n.isdigit() or len(n) > 6:
            raise web.HTTPBadRequest(
                text=f"parallelism {pair[:40]!r}: give COMPONENT:N pairs, e.g. count:4,split:2"
            )
        out[name] = int(n)
    return out


async def _files_body(request: web.Request) -> dict[str, str | None]:
    """The ``files`` of a JSON edit; a 400 for a body that is not ``{"files": {...}}``."""
    try:
        body: Any = await request.json()
    except (ValueError, RecursionError):
        raise web.HTTPBadRequest(
            text='send JSON: {"files": {"PATH": "new text" or null}}'
        ) from None
    if not isinstance(body, dict) or not isinstance(body.get("files"), dict):
        raise web.HTTPBadRequest(text='send a JSON object: {"files": {"PATH": "new text"}}')
    files: dict[str, str | None] = body["files"]  # overlay_problem checks the rest
    return files


def add_edit_routes(app: web.Application, master: Master) -> None:
    async def edit(request: web.Request) -> web.Response:
        problem = topology_name_problem(request.match_info["name"])
        if problem is not None:
            return _error(400, problem)
        q = request.query
        try:
            base = int(q["base"])
            to = int(q["to"]) if "to" in q else None
        except KeyError:
            raise web.HTTPBadRequest(
                text="name the revision the edit was made against: ?base=REV (GET "
                ".../revisions shows the current one)"
            ) from None
        except ValueError:
            raise web.HTTPBadRequest(text="base and to must be revision numbers") from None
        action = q.get("action", "")
        if action == "move":  # a move names a placement, not code (``_moves.py``)
            return _error(
                400, "a move has a route of its own: POST .../move?components=A,B&to=WHERE&base=REV"
            )
        components = [c for c in q.get("components", "").split(",") if c]
        parallelism = _parallelism(q.get("parallelism", ""))
        dry_run = q.get("dry_run", "") in ("1", "true")
        files = None
        data: bytes | None = None
        if request.content_type == "application/json":
            files = await _files_body(request)
        else:
            data = await request.read() or None
        try:
            record = await master.edit(
                request.match_info["name"],
                action,
                base,
                data,
                q.get("entry"),
                components,
                q.get("author", ""),
                to,
                parallelism,
                files=files,
                dry_run=dry_run,
            )
        except StaleRevisionError as exc:
            return web.json_response({"error": str(exc), "current": exc.current}, status=409)
        except (EditError, PackageRefusedError) as exc:
            return _refused(exc)
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _error(404, str(exc))
        return web.json_response(record, status=200 if dry_run else 202)

    async def files(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        problem = topology_name_problem(name)
        if problem is not None:
            return _error(400, problem)
        text = request.query.get("revision", "")
        if text and (not text.isascii() or not text.isdigit() or len(text) > 9):
            return _error(400, "revision is a revision number (GET .../revisions lists them)")
        try:
            return web.json_response(await master.edits.files(name, int(text) if text else None))
        except EditError as exc:
            return _error(404, str(exc))
        except StateError as exc:  # not kept: the request is not done
            return web.json_response({"error": str(exc)}, status=503)
        except HeadwaterError as exc:
            return _error(404, str(exc))

    app.router.add_post("/api/v1/topologies/{name}/revisions", edit)
    app.router.add_get("/api/v1/topologies/{name}/files", files)
