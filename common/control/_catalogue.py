"""The persisted state of a topology master (tmaster): epoch and checkpoint catalogue.

A JSON record of the state manager (``topologies/NAME/catalogue.json``: a file
written atomically, or a znode ZooKeeper acknowledged) saved after every change,
so that a restarted master resumes the running topology from its last complete
checkpoint.

A save that fails (a full disk, ZooKeeper unreachable) does not raise: the catalogue
goes on in memory, keeps the error in ``error`` (a health reason for the node) and
``save`` returns False, so that a checkpoint is completed only once it is kept; the
next save tries again.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from headwater.common._clock import SYSTEM_CLOCK, Clock
from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Topology
from headwater.common.plan import PhysicalPlan
from headwater.common.statemgr import Record, StateError, as_record
from headwater.common.wire._states import CheckpointState

log = logging.getLogger("headwater.control.catalogue")
KEEP = 20  # catalogue entries kept for the API; snapshots are pruned separately


@dataclass
class CheckpointRecord:
    id: int
    epoch: int
    started: float  # wall clock, seconds
    state: CheckpointState = CheckpointState.IN_PROGRESS
    duration_ms: float | None = None
    size_bytes: int = 0
    revision: int = 1  # the topology revision whose code took it
    acked: set[int] = field(default_factory=set)
    _t0: float = field(default_factory=SYSTEM_CLOCK.monotonic)  # when it started, monotonic

    def to_dict(self) -> dict[str, Any]:
        """Its fields as saved and shown (``acked``: how many; not ``dataclasses.asdict``, which
        deep-copies every set, twice a checkpoint for each of the catalogue's entries)."""
        return {
            "id": self.id,
            "epoch": self.epoch,
            "started": self.started,
            "state": self.state,
            "duration_ms": self.duration_ms,
            "size_bytes": self.size_bytes,
            "revision": self.revision,
            "acked": len(self.acked),
        }


class Catalogue:
    """The checkpoints of one domain and its epoch, saved to ``path`` (a record, or its
    file's path) on every change."""

    def __init__(self, path: str | os.PathLike[str] | Record, clock: Clock = SYSTEM_CLOCK) -> None:
        self.path = path  # where the next save goes (as_record at each save)
        self.clock = clock
        self.epoch = 0
        self.next_id = 1
        self.checkpoints: list[CheckpointRecord] = []
        self.error = ""  # why the last save failed ("": it did not)
        kept = as_record(path).read()
        if kept is not None:
            data = json.loads(kept)
            self.epoch = int(data["epoch"])
            self.next_id = int(data["next_id"])
            for c in data["checkpoints"]:
                rec = CheckpointRecord(
                    c["id"],
                    c["epoch"],
                    c["started"],
                    CheckpointState(c["state"]),
                    c["duration_ms"],
                    c["size_bytes"],
                    c.get("revision", 1),
                )
                if rec.state is CheckpointState.IN_PROGRESS:
                    rec.state = CheckpointState.FAILED  # the topology master died during it
                self.checkpoints.append(rec)

    def complete(self) -> list[CheckpointRecord]:
        return [c for c in self.checkpoints if c.state == CheckpointState.COMPLETE]

    def latest_complete(self, below: int | None = None) -> int:
        """Id of the newest complete checkpoint (below ``below``), or 0 for none."""
        ids = [c.id for c in self.complete() if below is None or c.id < below]
        return max(ids, default=0)

    def find(self, checkpoint_id: int) -> CheckpointRecord | None:
        return next((c for c in self.checkpoints if c.id == checkpoint_id), None)

    def start(self, epoch: int, revision: int = 1) -> CheckpointRecord:
        now = self.clock
        rec = CheckpointRecord(
            self.next_id, epoch, now.time(), revision=revision, _t0=now.monotonic()
        )
        self.next_id += 1
        self.checkpoints.append(rec)
        self.save()
        return rec

    def save(self) -> bool:
        """Write the catalogue; False (and ``error`` set) if the disk refused it."""
        # never drop the complete checkpoints a restore may still need
        complete = self.complete()[-3:]
        rest = [c for c in self.checkpoints if c not in complete][-KEEP:]
        self.checkpoints = sorted(complete + rest, key=lambda c: c.id)
        data = {
            "epoch": self.epoch,
            "next_id": self.next_id,
            "checkpoints": [c.to_dict() for c in self.checkpoints],
        }
        record = as_record(self.path)
        try:
            record.write(json.dumps(data).encode())
        except StateError as exc:
            if not self.error:
                log.error("cannot save the checkpoint catalogue %s: %s", record.where, exc)
            self.error = f"cannot save {record.where}: {exc.reason}"
            return False
        if self.error:
            log.info("checkpoint catalogue %s saved again", record.where)
        self.error = ""
        return True


def check_same_topology(
    path: str | os.PathLike[str] | Record, topology: Topology, plan: PhysicalPlan
) -> None:
    """Persist the topology's shape and physical plan; refuse to resume a different one.

    Snapshots are stored per (checkpoint, task) in each container, so resuming
    from this state only makes sense with the same components, parallelism and
    packing.
    """
    shape = {
        "topology": topology.name,
        "components": [[c.name, c.kind, c.parallelism] for c in topology.components],
        "plan": plan.to_dict(),
    }
    if not isinstance(path, Record):  # a file's path: its folder is made, as it always was
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    record = as_record(path)
    kept = record.read()
    if kept is not None:
        old = json.loads(kept)
        if old != shape:
            folder = record.where.rsplit("/", 1)[0]
            raise HeadwaterError(
                f"{folder} holds the state of topology {old['topology']!r} with another "
                f"shape or packing ({old['plan']['containers']} containers); resume it with the "
                "same file and --containers, or start in a fresh work directory"
            )
        return
    record.write(json.dumps(shape).encode())
