"""The tracker-style JSON API over one or many topology masters (tmasters).

Served by a standalone topology master process and by the master daemon.

Routes, for every topology NAME the lookup knows:

    GET  /api/v1/topologies                     every topology's summary
    GET  /api/v1/topologies/NAME                summary (state, containers, components,
                                                errors as the console's DAG shows them;
                                                on the master, ``edge``: its edge subgraph)
    GET  /api/v1/topologies/NAME/metrics        per component, task and stmgr
    GET  /api/v1/topologies/NAME/plan           the physical plan (and ``edge``, as above)
    GET  /api/v1/topologies/NAME/checkpoints    exactly-once checkpoints
    GET  /api/v1/topologies/NAME/exceptions     errors reported by instances
    GET  /api/v1/topologies/NAME/revisions      live edits: current revision and history
    POST /api/v1/topologies/NAME/activate|deactivate
    GET  /metrics                               all of it in the Prometheus text format

Who may call which route is in ``cloud/_access.py`` (a viewer reads, an
operator activates and deactivates).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from aiohttp import web

from headwater.common._prometheus import Exposition, FamilyCollector
from headwater.common.console import errors
from headwater.common.control import TopologyMaster
from headwater.common.control._prometheus import add_topologies
from headwater.common.security import TokenStore
from headwater.common.wire._states import TopologyState

from .._access import require_tokens
from ..console import add_topology_master_console

Lookup = Callable[[str], TopologyMaster | None]


def add_topology_routes(
    app: web.Application,
    lookup: Lookup,
    every: Callable[[], Iterable[TopologyMaster]],
    on_state: Callable[[str, str], None] = lambda topology, state: None,
    agents_of: Callable[[str], dict[str, int]] = lambda topology: {},
    edge_of: Callable[[TopologyMaster], dict[str, Any]] | None = None,
    errors_of: Callable[[TopologyMaster], dict[str, float]] = errors,
    held: Callable[[str | None], list[dict[str, Any]]] = lambda name: [],
) -> None:
    """``on_state(topology, state)`` hears activate/deactivate (the master tells the agents);
    ``agents_of(topology)`` gives the revision each agent's edge subgraph runs; ``edge_of``
    (the master's) the edge subgraph, added as ``edge`` to summaries and plans;
    ``errors_of`` the errors the console's DAG shows (the master's: edge included), added
    to summaries (``errors``, ``exceptions``, ``dead_letters``, ``failed``); ``held(name)``
    the master's deployments it keeps but does not run (all of them for None), listed after
    those it runs, each with ``held`` (why) and its revisions."""

    def with_edge(tm: TopologyMaster, view: dict[str, Any]) -> dict[str, Any]:
        return view if edge_of is None else {**view, "edge": edge_of(tm)}

    def summary(tm: TopologyMaster) -> dict[str, Any]:
        return {**with_edge(tm, tm.summary()), **errors_of(tm)}

    def tm_of(request: web.Request) -> TopologyMaster:
        name = request.match_info["name"]
        tm = lookup(name)
        if tm is None:
            known = ", ".join(sorted(t.topology.name for t in every())) or "none"
            raise web.HTTPNotFound(
                text=f"no topology named {name!r} (running: {known}); submit it first"
            )
        return tm

    async def topologies(request: web.Request) -> web.Response:
        return web.json_response([*(summary(tm) for tm in every()), *held(None)])

    async def topology(request: web.Request) -> web.Response:
        kept = held(request.match_info["name"])
        return web.json_response(kept[0] if kept else summary(tm_of(request)))

    async def metrics(request: web.Request) -> web.Response:
        return web.json_response(tm_of(request).metrics_view())

    async def plan(request: web.Request) -> web.Response:
        tm = tm_of(request)
        return web.json_response(with_edge(tm, tm.plan.to_dict()))

    async def checkpoints(request: web.Request) -> web.Response:
        return web.json_response(tm_of(request).checkpoints_view())

    async def exceptions(request: web.Request) -> web.Response:
        return web.json_response(list(tm_of(request).exceptions))

    async def revisions(request: web.Request) -> web.Response:
        kept = held(request.match_info["name"])
        if kept:
            view = {"current": kept[0]["revision"], "applying": None, "agents": {}}
            return web.json_response({**view, "revisions": kept[0]["revisions"]})
        tm = tm_of(request)
        return web.json_response({**tm.revisions_view(), "agents": agents_of(tm.topology.name)})

    async def activate(request: web.Request) -> web.Response:
        tm = tm_of(request)
        tm.set_state(TopologyState.RUNNING)
        on_state(tm.topology.name, TopologyState.RUNNING)
        return web.json_response({"state": tm.state})

    async def deactivate(request: web.Request) -> web.Response:
        tm = tm_of(request)
        tm.set_state(TopologyState.PAUSED)
        on_state(tm.topology.name, TopologyState.PAUSED)
        return web.json_response({"state": tm.state})

    base = "/api/v1/topologies/{name}"
    app.router.add_get("/api/v1/topologies", topologies)
    app.router.add_get(base, topology)
    app.router.add_get(f"{base}/metrics", metrics)
    app.router.add_get(f"{base}/plan", plan)
    app.router.add_get(f"{base}/checkpoints", checkpoints)
    app.router.add_get(f"{base}/exceptions", exceptions)
    app.router.add_get(f"{base}/revisions", revisions)
    app.router.add_post(f"{base}/activate", activate)
    app.router.add_post(f"{base}/deactivate", deactivate)


def add_metrics_route(app: web.Application, exposition: Exposition) -> None:
    """``GET /metrics``: ``exposition`` rendered at every scrape."""

    async def metrics(request: web.Request) -> web.Response:
        return web.Response(
            body=exposition.render(), headers={"Content-Type": exposition.content_type}
        )

    app.router.add_get("/metrics", metrics)


def make_app(tm: TopologyMaster, tokens: TokenStore | None) -> web.Application:
    """The API of a single-topology master process (``headwater run``); every request
    needs a token of ``tokens`` (None: none, for a topology master run ``--insecure``)."""
    app = web.Application(middlewares=[] if tokens is None else [require_tokens(tokens)])
    add_topology_routes(app, lambda name: tm if name == tm.topology.name else None, lambda: [tm])
    add_metrics_route(
        app, Exposition(FamilyCollector(lambda families: add_topologies(families, [tm], "cloud")))
    )
    add_topology_master_console(app, tm, tokens)  # the web console, without live edits
    return app
