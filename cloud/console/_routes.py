"""The console on the master and on the topology master of ``headwater run``.

The routes are ``common/console/_routes.py``'s; here, who the caller is (its
token, checked against the server's tokens before each event) and what the
snapshot holds (``_snapshot.py`` for the master; one topology for ``headwater
run``, whose topology master makes no live edits).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from aiohttp import web

from headwater.cloud._access import authenticate
from headwater.common.console import add_console, of_topology_master
from headwater.common.console._history import History
from headwater.common.console._history_http import add_history_routes
from headwater.common.control import TopologyMaster
from headwater.common.security import TokenStore

from ._edge_sources import EdgeSources
from ._snapshot import snapshot

if TYPE_CHECKING:
    from headwater.cloud.master._master import Master


def add_console_routes(app: web.Application, master: Master, insecure: bool = False) -> None:
    """Add the console's routes to the master's ``app`` (``insecure``: it asks no token),
    and the history of its topologies (sampled while ``app`` serves)."""
    history = History(lambda: master.tms, EdgeSources(master))
    add_history_routes(app, history)
    _add(
        app,
        partial(snapshot, master, history=history),
        None if insecure else master.tokens,
        edits=True,
    )


def add_topology_master_console(
    app: web.Application, tm: TopologyMaster, tokens: TokenStore | None
) -> None:
    """Add them to a lone topology master's ``app`` (``headwater run``): one topology, no
    nodes, and no live edits (only the master makes those); ``tokens`` None: no token."""
    history = History(lambda: {tm.topology.name: tm})
    add_history_routes(app, history)
    _add(app, partial(of_topology_master, tm, history=history), tokens, edits=False)


def _add(
    app: web.Application,
    snapshot_of: partial[dict[str, Any]],
    tokens: TokenStore | None,
    edits: bool,
) -> None:
    """``edits``: the master's console (live edits, container logs, Spark jobs), not
    ``headwater run``'s."""

    def caller(request: web.Request) -> tuple[str, str | None] | str:
        """(role, token id) of the caller, or why its token no longer holds."""
        if tokens is None:
            return "admin", None
        found = authenticate(tokens, request.headers.get("Authorization"))
        return found if isinstance(found, str) else (found.role, found.id)

    add_console(
        app,
        snapshot_of,
        caller,
        edits,
        insecure=tokens is None,
        logs=edits,
        spark=edits,
        history=True,
    )
