"""The control plane of one checkpoint domain: the topology master (tmaster).

A *topology master* runs one domain: its physical plan, heartbeats,
checkpoints, recovery and live edits. The *master* is something else: the
cloud daemon, which hosts one topology master per topology for the cloud
domain. This package lives in ``common`` because it runs on both sides: every
edge agent hosts one topology master per edge subgraph it runs, so that an
agent checkpoints on its own while its link to the cloud is down.

Modules, one concept each: ``_tmaster`` (the session and the composition),
``_servicer`` (gRPC), ``_checkpoints`` (the checkpoint coordinator),
``_recovery`` (epochs, restores, the rollback throttle), ``_edits`` (the
live-edit state machine), ``_revision_set`` and ``_revisions`` (revisions and
their history), ``_catalogue`` (the persisted checkpoints), ``_watchdog`` and
``_crashloop`` (what holds the topology up), ``_views`` (JSON for the API).
"""

from ._catalogue import Catalogue, CheckpointRecord, check_same_topology
from ._crashloop import CrashLoop, CrashLoopDetector, CrashLoopPolicy, CrashLoopWatch
from ._servicer import TopologyDispatch
from ._tmaster import TopologyMaster

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
