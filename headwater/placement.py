"""Where components run: ``edge(selector)`` on matching agents, or ``cloud`` (the default).

>>> from headwater.placement import cloud, edge
>>> edge(site="plant-1")
Placement(where='edge', selector={'site': 'plant-1'})

(``headwater.edge`` and ``headwater.cloud`` are the agent and cloud packages,
so the two placements live here.)

A keyed component that may move between edge and cloud (``headwater move``) declares
which agent owns each key: ``config=sites("site")`` says that its keyed input's field
``site`` names, for every record, the ``site`` label of the agent whose key it is (the
same for every record of a key):

>>> sites("site")
{'headwater.sites': 'site'}
"""

from headwater.common.api import Placement, cloud, edge
from headwater.common.api._config import SITES


def sites(field: str) -> dict[str, str]:
    """Component config: ``field`` of its keyed input is the agent label owning the key."""
    return {SITES: field}


__all__ = ["SITES", "Placement", "cloud", "edge", "sites"]
