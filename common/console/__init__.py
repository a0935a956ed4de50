"""The web console's page and the parts every server that shows it shares.

Hand-written static files (``static/``: HTML, CSS and JavaScript modules, no
build step), the routes that serve them with a strict Content-Security-Policy
plus ``whoami`` and the event stream (``add_console``), and the snapshot of one
topology master (``topology_row``, ``topology_detail``, ``of_topology_master``) and its
errors as the DAG shows them (``errors``). The history the charts draw and the page's rates
come from is ``_history.py`` (kept), ``_history_query.py`` (read back) and
``_history_http.py`` (its route and sampling loop).
The master (``cloud/console/``) and an agent's status port (``edge/_console.py``)
add what only they know. docs/design.md, "The web console", says how it fits.
"""

from __future__ import annotations

from ._routes import add_console
from ._snapshot import (
    KEEP,
    errors,
    of_topology_master,
    reliability,
    topology_detail,
    topology_row,
)

__all__ = [
    "KEEP",
    "add_console",
    "errors",
    "of_topology_master",
    "reliability",
    "topology_detail",
    "topology_row",
]
