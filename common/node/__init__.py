"""The node daemon shared by the cloud worker and the edge agent (the daemons layer).

A node attaches to the master, takes its orders (run, stop, set state, revise)
and supervises the container processes they name. The cloud worker
(``headwater.cloud.worker``) is a plain node; the edge agent
(``headwater.edge``) is a node that also ingests MQTT and hosts its edge
domain's topology master. It lives in ``common`` because both sides run it, and
edge and cloud never import each other.
"""

from ._identity import lock_workdir, node_identity
from ._node import Node

__all__ = ["Node", "lock_workdir", "node_identity"]
