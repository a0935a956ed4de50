"""Moves: a running topology's components placed elsewhere, edge <-> cloud (issue 37)::

    POST /api/v1/topologies/NAME/move?components=A,B&to=PLACEMENT&base=REV
         [&author=WHO][&dry_run=1]

``to`` is ``cloud``, ``edge`` (every agent) or ``edge(LABEL=VALUE,...)``. A move is a
revision of the running package with ``headwater_placement.json`` beside its topology file
(``common/plan/_package_placement.py``), checked as any edit is (``check_edit``'s
``move``: ``common/control/_moves.py`` says why a move cannot be made), and kept in the
same history (action ``move``). It has a route of its own rather than an action of
``.../revisions``: there ``to`` is a rollback's revision number and every other action
sends or names code, while a move names components and a placement only.

A dry run answers the preview (the plan diff: what moves, which domains switch). The
placement file marks each moved component with where it came from (``{"to": ..., "from":
...}``), so the cloud runs it as a hand-over bolt while the agents switch (docs/design.md,
"Moving a subgraph between edge and cloud"): a component without keyed state whose edge
input only it reads in the cloud is switched live, the cloud and each agent at a barrier of
their own; a move whose switch is not built yet (keyed state, or an input the cloud also
reads: ``switch_not_built``) is answered 501 with what it needs and changes nothing. A
refusal is a 400 with the reason (those of ``move_problem``, and ``sites_problem``: agents
that cannot say which keys are theirs), a stale base a 409 with ``current``, an unknown
topology a 404.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from aiohttp import web

from headwater.common._exceptions import HeadwaterError, TopologyLoadError
from headwater.common.api import Placement, Topology
from headwater.common.api._config import SITES
from headwater.common.control._moves import keyed, where
from headwater.common.control._revisions import (
    EditError,
    NotBuiltError,
    StaleRevisionError,
    without,
)
from headwater.common.plan._package_placement import (
    package_with_placement,
    parse_placement,
    placement_text,
)

from ._deployments import topology_name_problem
from ._edits import Edits
from ._master import Master


async def move(
    edits: Edits,
    name: str,
    components: list[str],
    to: str,
    base: int,
    author: str = "",
    dry_run: bool = False,
    agents: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Any]:
    """Place ``components`` of topology ``name`` at ``to`` (``parse_placement``'s text),
    as a revision of the running code made against ``base``; ``agents``: the labels of
    the agents running its edge subgraph (``sites_problem``). EditError says why not
    (NotBuiltError: it checks out, but the switch is not built); StaleRevisionError when
    ``base`` is not the current revision; HeadwaterError for an unknown topology."""
    problem = topology_name_problem(name)
    if problem is not None:
        raise EditError(problem)
    try:
        target = parse_placement(to)
    except ValueError as exc:
        raise EditError(str(exc)) from None
    tm = edits.book.running(name)
    if base != tm.current:
        raise StaleRevisionError(base, tm.current)
    if not components:
        raise EditError("name the components to move: components=A,B")
    cur = tm.revisions[tm.current].record
    try:
        running = without(await edits.code.logical(cur.package, cur.entry), cur.exclude)
    except HeadwaterError as exc:
        raise EditError(f"the running topology does not load: {exc}") from exc
    unknown = sorted(set(components) - {c.name for c in running.components})
    if unknown:
        raise EditError(f"topology {name!r} has no component {', '.join(unknown)}")
    problem = sites_problem(running, components, target, agents or {})
    if problem is not None:
        raise EditError(problem)
    changes: dict[str, str | dict[str, str]] = {  # marked: the cloud hands over (_domains)
        c: {"to": placement_text(target), "from": placement_text(running.component(c).placement)}
        for c in components
    }
    try:  # a package may be tens of MiB: re-zipped off the event loop
        data = await asyncio.to_thread(
            package_with_placement, edits.packages.get(cur.package), cur.entry, changes
        )
    except TopologyLoadError as exc:
        raise EditError(str(exc)) from None
    return await edits.edit(
        name, "move", base, data, cur.entry, components, author, dry_run=dry_run
    )


def sites_problem(
    running: Topology,
    components: list[str],
    target: Placement,
    agents: Mapping[str, Mapping[str, str]],
) -> str | None:
    """Why the agents cannot say which keys are theirs, or None: every agent on the edge
    side of a keyed component's move needs the label its ``sites`` field names, each with
    a value of its own (a key's state goes to one agent, or comes from one)."""
    for name in components:
        spec = running.component(name)
        field = spec.config.get(SITES)
        if not keyed(spec) or not isinstance(field, str):
            continue  # move_problem says why a keyed one without the relation cannot move
        side = target if target.is_edge else spec.placement
        seen: dict[str, str] = {}
        for agent, labels in sorted(agents.items()):
            if not side.matches(labels):
                continue
            value = labels.get(field)
            if value is None:
                return (
                    f"agent {agent!r} runs {name!r} at {where(side)} but has no label "
                    f"{field!r}, so it cannot say which keys of {name!r} are its own: give it "
                    f"one (headwater agent --label {field}=...)"
                )
            if value in seen:
                return (
                    f"agents {seen[value]!r} and {agent!r} both have {field}={value}: the "
                    f"state of a key of {name!r} belongs to one agent, so each needs a "
                    f"{field} of its own"
                )
            seen[value] = agent
    return None


def _error(status: int, reason: str, **more: Any) -> web.Response:
    return web.json_response({"error": reason, **more}, status=status)


def _agent_labels(master: Master, name: str) -> dict[str, dict[str, str]]:
    """The labels of the agents running topology ``name``'s edge subgraph."""
    dep = master.deployments.get(name)
    records = master.nodes.records
    return {a: dict(records[a].info.labels) for a in (dep.agents if dep else ()) if a in records}


def add_move_routes(app: web.Application, master: Master) -> None:
    async def post(request: web.Request) -> web.Response:
        name = request.match_info["name"]
        q = request.query
        text = q.get("base", "")
        if not text.isascii() or not text.isdigit() or len(text) > 9:
            return _error(
                400,
                "name the revision the move was made against: ?base=REV (GET .../revisions "
                "shows the current one)",
            )
        if not q.get("to"):
            return _error(400, "say where to: ?to=cloud, edge or edge(LABEL=VALUE)")
        components = [c for c in q.get("components", "").split(",") if c]
        try:
            record = await move(
                master.edits,
                name,
                components,
                q["to"],
                int(text),
                q.get("author", ""),
                q.get("dry_run", "") in ("1", "true"),
                _agent_labels(master, name),
            )
        except StaleRevisionError as exc:
            return _error(409, str(exc), current=exc.current)
        except NotBuiltError as exc:
            return _error(501, str(exc))
        except EditError as exc:
            return _error(400, str(exc))
        except HeadwaterError as exc:
            return _error(404, str(exc))
        return web.json_response(record, status=200 if record.get("dry_run") else 202)

    app.router.add_post("/api/v1/topologies/{name}/move", post)
