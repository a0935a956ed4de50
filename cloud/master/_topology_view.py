"""The master's view of a topology's edge side, beside its topology master's cloud view.

A topology master holds the cloud subgraph only: there, a boundary component (an edge
component whose streams cloud components consume) is an uplink receiver, a spout without
inputs, and the edge steps before it are absent. The master knows the whole topology
(``cloud/console``'s ``whole_topology``, the one its console draws) and the agents, so its
``GET /api/v1/topologies[/NAME]`` and ``/plan`` add ``edge``:

    {"agents": [agents running the edge subgraph],
     "boundary": {component: [streams the cloud consumes, over the uplink]},
     "components": [{name, kind, parallelism, inputs, outputs (as in the summary),
                     "selector": {label: value}, "uplink": bool,
                     "agents": [the agents whose labels match the selector]}]}

A component named in ``boundary`` is both: in the summary's ``components``, the cloud's
uplink receiver; in ``edge.components``, the component the agents run (``uplink``: true).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from headwater.common.control import TopologyMaster
from headwater.common.control._views import component
from headwater.common.plan import boundary

from ..console._snapshot import whole_topology

if TYPE_CHECKING:
    from ._master import Master


def edge_view(master: Master, tm: TopologyMaster) -> dict[str, Any]:
    """``tm``'s edge subgraph: its components, where each runs, and the uplink boundary."""
    whole = whole_topology(master, tm)
    dep = master.deployments.get(tm.topology.name)
    agents = sorted(dep.agents) if dep is not None else []
    labels = {
        a: dict(master.nodes.records[a].info.labels)
        for a in agents
        if master.nodes.records.get(a) is not None
    }
    uplinks = boundary(whole)
    return {
        "agents": agents,
        "boundary": uplinks,
        "components": [
            {
                **component(c),
                "selector": dict(c.placement.selector),
                "uplink": c.name in uplinks,
                "agents": [a for a, mine in labels.items() if c.placement.matches(mine)],
            }
            for c in whole.components
            if c.placement.is_edge
        ],
    }
