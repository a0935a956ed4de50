"""Where components run: ``edge(selector)`` on matching agents, or ``cloud`` (the default).

>>> from headwater.placement import cloud, edge
>>> edge(site="plant-1")
Placement(where='edge', selector={'site': 'plant-1'})

(``headwater.edge`` and ``headwater.cloud`` are the agent and cloud packages,
so the two placements live here.)
"""

from headwater.common.api import Placement, cloud, edge

__all__ = ["Placement", "cloud", "edge"]
