"""The states of the control plane that other processes read.

A topology master (tmaster) sends its topology's state in ``PhysicalPlan.state``
to every container and shows it, with its checkpoints and revisions, in the
JSON views that the CLI, the master daemon and the agents read. The values are
strings on the wire; these enums are ``StrEnum``, so an enum compares equal to
its string and JSON and protobuf carry exactly the strings they always have.

>>> TopologyState.RUNNING == "RUNNING", f"{CheckpointState.CORRUPT}"
(True, 'CORRUPT')
"""

from __future__ import annotations

from enum import StrEnum


class TopologyState(StrEnum):
    """What a topology does now (``PhysicalPlan.state``, the ``state`` of its summary)."""

    RUNNING = "RUNNING"  # spouts emit
    PAUSED = "PAUSED"  # deactivated: spouts hold (checkpoints still switch an edit)
    RESTORING = "RESTORING"  # every container restores a checkpoint; spouts wait


class CheckpointState(StrEnum):
    """One checkpoint in the catalogue (``/checkpoints``, ``catalogue.json``)."""

    IN_PROGRESS = "IN_PROGRESS"  # requested; not every instance has acknowledged
    COMPLETE = "COMPLETE"  # every instance stored its snapshot, and it is on disk
    FAILED = "FAILED"  # declined, timed out, abandoned by a restore or a restart
    CORRUPT = "CORRUPT"  # complete once, but a snapshot failed its checksum on restore


class RevisionStatus(StrEnum):
    """The outcome of one revision (a live edit) in the history (``/revisions``)."""

    APPLYING = "applying"
    APPLIED = "applied"
    ROLLED_BACK = "rolled_back"  # failed before its first checkpoint: the previous one runs
    REFUSED = "refused"  # a container could not load it: nothing changed
