"""The revisions one topology master (tmaster) knows: each one's topology, plan and package.

The history itself (``RevisionLog``, in ``_revisions``) holds records; this
holds what running a revision takes: its topology for this domain, its
physical plan and its package bytes for the containers. A revision only in
the history (the topology master restarted since, and a checkpoint to restore
was taken by it) is loaded on demand by the ``RevisionLoader`` its host gives.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass

from ..api import Topology
from ..plan import PhysicalPlan, plan_from_json, revise_plan
from ..wire._states import RevisionStatus
from ..wire.proto import runtime_pb2 as pb
from ._revisions import EditError, RevisionLog, RevisionRecord

log = logging.getLogger("headwater.tmaster")

# (revision record) -> (the revision's topology for this domain, its package bytes)
RevisionLoader = Callable[[RevisionRecord], tuple[Topology, bytes]]


@dataclass
class Revision:
    topology: Topology
    plan: PhysicalPlan
    record: RevisionRecord
    data: bytes  # its package (empty for the first revision: containers start with it)


class RevisionSet:
    """Revision number -> ``Revision``, over the persisted history ``log``."""

    def __init__(
        self, log: RevisionLog, first: Revision, load: RevisionLoader | None = None
    ) -> None:
        self.log = log
        self.load = load
        self._known = {1: first}

    def __getitem__(self, revision: int) -> Revision:
        """The revision, loaded if only its record is known; EditError if none is."""
        if revision not in self._known:
            rec = self.log.find(revision)
            if rec is None or self.load is None:
                raise EditError(f"revision {revision} is not known here")
            topology, data = self.load(rec)
            plan = plan_from_json(json.dumps(rec.plan))
            self._known[revision] = Revision(topology, plan, rec, data)
        return self._known[revision]

    def add(self, revision: Revision) -> None:
        """A proposed revision (numbered already): known, and in the history."""
        self._known[revision.record.revision] = revision
        self.log.add(revision.record)

    def propose(
        self,
        record: RevisionRecord,
        topology: Topology,
        data: bytes,
        running: PhysicalPlan,
        replaced: tuple[str, ...],
        number: int = 0,
    ) -> dict[str, list[int]]:
        """Plan ``topology`` from the ``running`` plan, number ``record`` (next in the
        history, or ``number``) and add it; returns the replaced components whose tasks
        change, with their task ids in the running plan."""
        plan = revise_plan(running, topology)
        old_ids, new_ids = running.ids(), plan.ids()
        rescaled = {c: old_ids[c] for c in replaced if old_ids.get(c) != new_ids.get(c)}
        record.revision = number or self.log.next_number()
        record.plan = plan.to_dict()
        self.add(Revision(topology, plan, record, data))
        return rescaled

    def running(self, revision: int) -> Revision:
        """``revision`` runs (restored or taken over): it counts as applied."""
        r = self[revision]
        if r.record.status is not RevisionStatus.APPLIED and revision != 1:
            r.record.status, r.record.error = RevisionStatus.APPLIED, ""
            self.log.save()
        return r

    def finish(self, revision: int, status: RevisionStatus, error: str = "") -> None:
        """Record an edit's outcome."""
        rec = self[revision].record
        rec.status, rec.error = status, error
        self.log.save()
        if status is RevisionStatus.APPLIED:
            log.info("revision %d applied", revision)
        else:
            log.warning("revision %d %s: %s", revision, status.replace("_", " "), error)

    def message(
        self, topology: str, revision: int, switch_at: int = 0, replaced: tuple[str, ...] = ()
    ) -> pb.Revision:
        """The command that makes a container load ``revision`` (of ``topology``)."""
        r = self[revision]
        return pb.Revision(
            revision=revision,
            package=r.record.package,
            package_data=r.data,
            entry=r.record.entry,
            exclude=r.record.exclude,
            plan=pb.PhysicalPlan(
                topology=topology,
                instances=instance_infos(r.plan),
            ),
            switch_at=switch_at,
            replaced=list(replaced),
        )


def instance_infos(plan: PhysicalPlan) -> list[pb.InstanceInfo]:
    """A plan's instances as the ``PhysicalPlan`` message carries them."""
    return [
        pb.InstanceInfo(
            task_id=i.task_id,
            component=i.component,
            component_index=i.index,
            container=i.container,
        )
        for i in plan.instances
    ]
