"""The control plane of one checkpoint domain: the topology master.

It lives in ``common`` because it runs on both sides: the master hosts one
per topology for the cloud domain, and every edge agent hosts one per edge
subgraph it runs, so that an agent checkpoints on its own while its link to
the cloud is down.
"""

from ._catalogue import Catalogue, CheckpointRecord, check_same_topology
from ._crashloop import CrashLoop, CrashLoopDetector, CrashLoopPolicy, CrashLoopWatch
from ._tmaster import TopologyDispatch, TopologyMaster

__all__ = [
    "Catalogue",
    "CheckpointRecord",
    "CrashLoop",
    "CrashLoopDetector",
    "CrashLoopPolicy",
    "CrashLoopWatch",
    "TopologyDispatch",
    "TopologyMaster",
    "check_same_topology",
]
