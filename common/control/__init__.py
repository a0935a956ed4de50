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

from typing import TYPE_CHECKING

from ._catalogue import Catalogue, CheckpointRecord, check_same_topology
from ._crashloop import CrashLoop, CrashLoopDetector, CrashLoopPolicy, CrashLoopWatch

if TYPE_CHECKING:
    from ._servicer import TopologyDispatch
    from ._tmaster import TopologyMaster

_LAZY = {"TopologyDispatch": "_servicer", "TopologyMaster": "_tmaster"}
"""Imported when first asked for: they need gRPC and the protobuf stubs, which a process
that only packs a topology or watches for crash loops (``headwater run``'s launcher, at
the head of its start-up) does without."""


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{_LAZY[name]}"), name)
    globals()[name] = value
    return value


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
