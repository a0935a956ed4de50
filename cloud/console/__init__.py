"""The web console on the master (and on the topology master of ``headwater run``).

The page, its routes and a topology master's snapshot are ``common/console/``
(an agent's status port serves them too); here, the master's side: who the
caller is by its token, the master's snapshot (the whole topology with its
agents' figures, the nodes, the models, the Spark jobs) and the agents' edge figures its
history samples (``_edge_sources.py``). docs/design.md, "The web
console", says how the pieces fit.
"""

from __future__ import annotations

from ._routes import add_console_routes, add_topology_master_console

__all__ = ["add_console_routes", "add_topology_master_console"]
