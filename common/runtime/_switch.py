"""Live edits in a container: stage a revision, switch to it at its checkpoint, or abort it.

The topology master sends a revision with the checkpoint to switch at
(exactly-once only). ``EditSwitch.on_revision`` loads it (refusing the edit
if the new code does not load), tells each local instance what to do at that
barrier (retire, or route by the new plan), and acknowledges. When that
checkpoint commits (``on_commit``) the replaced and removed instances stop
and the new ones start from the checkpoint: a replacement from its own
snapshot, an attached component empty, and a component whose parallelism
changed from its share of the old tasks' keys, which the master gathers
(``put_state``) and hands back (``on_handover``, split by ``rescale``).
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from ..wire._control import Abort, Prepare
from ..wire.proto import runtime_pb2 as pb
from ._loaded_revisions import LoadedRevisions
from ._move_outgoing import GivenUp, MoveOutgoing
from ._procs import terminate
from ._rescale import RescaleError, rescale
from ._session import MasterSession
from ._snapshots import Handout, Snapshots
from ._stmgr import StreamManager
from ._supervisor import Supervisor
from ._switch_fence import arriving, fence_snapshots, retiring_fences

log = logging.getLogger("headwater.container")


@dataclass
class PendingSwitch:
    revision: int
    at: int  # the switch checkpoint
    retiring: set[int]  # local tasks that stop after it (replaced or removed)
    # local tasks that start then -> what they start from: "snapshot" (a replacement's own),
    # "empty" (attached) or "handover" (a new parallelism: the old tasks' keys for it)
    starting: dict[int, str]
    rescaled: dict[str, list[int]]  # component -> its old tasks (parallelism changes)
    old_ids: dict[str, list[int]]  # component -> its tasks in the revision it switches from


class EditSwitch:
    def __init__(
        self,
        container: int,
        stmgr: StreamManager,
        revisions: LoadedRevisions,
        supervisor: Supervisor,
        recovery: Snapshots,
        session: MasterSession,
    ) -> None:
        self._container = container
        self._stmgr = stmgr
        self._revisions = revisions
        self._supervisor = supervisor
        self._recovery = recovery
        self._session = session
        self.pending: PendingSwitch | None = None
        self.handover: set[int] = set()  # new tasks waiting for their share of the keys
        # the keys a moved component's cloud copy gives up, for the master (issue 37): read
        # from every snapshot the container receives
        self.outgoing = MoveOutgoing(self._moving_to_edge, self._give)
        recovery.watch_state = self.outgoing.on_state

    def _moving_to_edge(self, task: int) -> str | None:
        """The component of ``task``, where it is a keyed one moving to the edge."""
        if self._revisions.domain != "cloud":
            return None
        running = self._revisions.running
        component = next((i.component for i in running.plan.instances if i.task_id == task), "")
        if not component or not arriving(running.topology, component):
            return None
        return component

    async def _give(self, g: GivenUp) -> None:
        await self._session.put_state(
            g.revision, g.component, g.task, g.checkpoint, g.blob, site=g.site
        )

    async def on_revision(self, r: pb.Revision) -> None:
        try:
            new = self._revisions.load(r)
        except Exception as exc:  # the new code fails to load: the edit is refused
            log.warning("revision %d cannot be loaded: %s", r.revision, exc)
            await self._session.ack_switch(
                r.revision, ok=False, error=f"container {self._container}: {exc}"
            )
            return
        if not r.switch_at:
            return
        running = self._revisions.running
        local = self._revisions.local_tasks
        old = {i.task_id for i in running.plan.instances}
        replaced = set(r.replaced)
        new_tasks = {i.task_id: i.component for i in new.plan.instances}
        # old tasks stop if replaced or removed; new ones start, restored if replacements
        retiring = {t for t in local if t not in new_tasks or new_tasks[t] in replaced}
        old_ids, new_ids = running.plan.ids(), new.plan.ids()
        rescaled = {c: old_ids[c] for c in replaced if old_ids.get(c) != new_ids.get(c)}
        arrives = self._revisions.domain == "edge"  # from the cloud, with its keys
        starting = {
            i.task_id: "handover"
            if i.component in rescaled
            or (arrives and i.component not in old_ids and arriving(new.topology, i.component))
            else "snapshot"
            if i.task_id in old
            else "empty"
            for i in new.plan.in_container(self._container)
            if i.component in replaced or i.task_id not in old
        }
        prepare = Prepare(
            at=r.switch_at,
            file=new.file,
            plan=new.plan_file or "",
            topology=self._revisions.name,
            domain=self._revisions.domain,
            labels=self._revisions.labels,
        )
        fences = retiring_fences(  # a keyed component arriving from the cloud: its input's
            new.topology,  # outbox sink seals the fence last
            {c: [t for t in ts if t in retiring] for c, ts in old_ids.items()},
            r.revision,
            r.switch_at,
            self._revisions.labels,
        )
        for task in local:
            retire = Prepare(at=r.switch_at, retire=True, fence=fences.get(task))
            self._stmgr.send_control(task, retire if task in retiring else prepare)
        self._stmgr.stage(new.plan, retiring, r.switch_at)
        self.pending = PendingSwitch(r.revision, r.switch_at, retiring, starting, rescaled, old_ids)
        log.info(
            "revision %d staged: switch at checkpoint %d (%d tasks retire, %d start here)",
            r.revision,
            r.switch_at,
            len(retiring),
            len(starting),
        )
        await self._session.ack_switch(r.revision, ok=True)

    def abort(self, revision: int) -> None:
        """The master abandoned ``revision``: keep running the current one."""
        if self.pending is None or self.pending.revision != revision:
            return
        self.forget()
        self._stmgr.retiring = {}
        self._revisions.use(self._revisions.current)
        log.info("revision %d abandoned", revision)

    def restored(self) -> None:
        """A restore: the staged revision goes, and the keys given up after its checkpoint
        are given up again by the replay."""
        self.forget()
        self.outgoing.forget()

    def forget(self) -> None:
        """Drop the staged revision (abandoned, or overridden by a restore)."""
        if self.pending is None:
            return
        self.pending = None
        for task in self._revisions.local_tasks:
            self._stmgr.send_control(task, Abort())

    async def on_commit(self, checkpoint: int) -> None:
        if self.pending is not None and self.pending.at == checkpoint:
            await self._switch()
        await self.outgoing.on_commit(checkpoint)

    async def _switch(self) -> None:
        """The switch checkpoint committed: the old instances go, the new ones start."""
        sw = self.pending
        assert sw is not None
        self.pending = None
        procs = self._supervisor.take(sw.retiring)
        # each stops by itself once it has published the commit; a slow one is made to
        await asyncio.get_running_loop().run_in_executor(None, terminate, procs, 5.0)
        for task in sw.retiring:
            self._stmgr.retire(task)
        self._revisions.use(sw.revision)
        store = self._recovery.store
        for component, tasks in sw.rescaled.items():  # their state goes to the new tasks
            for task in tasks:
                if task in sw.retiring:
                    blob = store.snapshot(sw.at, task) or b""
                    await self._session.put_state(sw.revision, component, task, sw.at, blob)
        self.handover = {t for t, start in sw.starting.items() if start == "handover"}
        if not sw.starting:
            await self._session.ack_switch(sw.revision, ok=True)
        else:
            snapshots = {
                t: store.snapshot(sw.at, t) if start == "snapshot" else None
                for t, start in sw.starting.items()
            }
            new = self._revisions.running
            of = {i.task_id: i.component for i in new.plan.instances}
            snapshots |= fence_snapshots(  # a component leaving for the cloud
                new.topology,
                {t: (of[t], snapshots.get(t)) for t in sw.starting},
                sw.old_ids,
                lambda t: store.snapshot(sw.at, t),
                sw.revision,
                sw.at,
                self._revisions.labels,
            )
            order = pb.Restore(checkpoint_id=sw.at, epoch=self._stmgr.epoch, revision=sw.revision)
            self._recovery.hand_out(Handout(order, snapshots, set(sw.starting), self._started))
            for task in sw.starting:
                if task not in self.handover:  # those wait for their keys
                    self._supervisor.start(task)
        log.info(
            "revision %d runs here: %d tasks retired, %d started",
            sw.revision,
            len(sw.retiring),
            len(sw.starting),
        )

    async def _started(self, order: pb.Restore) -> None:
        await self._session.ack_switch(order.revision, ok=True)

    async def on_handover(self, h: pb.StateHandover) -> None:
        """A rescaled component's old snapshots: each new task here keeps its keys, then starts."""
        rev = self._revisions.get(h.revision)
        if rev is None or h.revision != self._revisions.current:
            return
        mine = [
            i
            for i in rev.plan.in_container(self._container)
            if i.component == h.component and i.task_id in self.handover
        ]
        blobs = [p.blob or None for p in h.parts]
        n = len(rev.plan.tasks(h.component))
        try:
            shares = {i.task_id: rescale(h.component, blobs, i.index, n) for i in mine}
        except RescaleError as exc:
            log.warning("%s", exc)
            await self._session.report_failure(str(exc))
            return
        for task, blob in shares.items():
            self._recovery.add_snapshot(task, blob)
            self.handover.discard(task)
            self._supervisor.start(task)
