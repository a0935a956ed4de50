"""The master's node registry: the nodes that attached, their sessions and what they report.

Nodes (cloud workers and edge agents) dial the master and attach; the master
never dials a node. Each is a ``NodeRecord`` here: while it is attached, the
queue of the commands its attach stream carries (``send``); what it last
reported of itself, its metrics bounded (``MAX_NODE_METRICS``); and whether it
is online (attached, and heard within ``NODE_OFFLINE_AFTER_S``). The registry
holds the nodes' identities too (``Enrolment``, None while the master runs
--insecure): a revoked node's session ends and every worker is told; a
forgotten one's id may enrol again.

The registry knows nothing of deployments (``_master.py``); the master hands it
two callbacks: ``attached``, which queues what the deployments give a node that
(re)attaches, and ``gives``, whether they give a node a container: a container
a node reports running that it is not given gets a stop order (``report``).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

from headwater.common._exceptions import HeadwaterError
from headwater.common._ids import node_id_problem
from headwater.common.wire.proto import runtime_pb2 as pb

from ._enrolment import Enrolment

log = logging.getLogger("headwater.master")
NODE_OFFLINE_AFTER_S = 6.0


@dataclass
class NodeRecord:
    info: pb.NodeInfo
    queue: asyncio.Queue[pb.NodeCommand] | None = None
    last_seen: float = field(default_factory=time.monotonic)
    attached_at: float = field(default_factory=time.time)
    status: pb.NodeStatus | None = None
    error: str = ""

    def view(self) -> dict[str, Any]:
        s = self.status
        online = self.queue is not None and time.monotonic() - self.last_seen < NODE_OFFLINE_AFTER_S
        return {
            "id": self.info.node_id,
            "kind": self.info.kind,
            "labels": dict(self.info.labels),
            "version": self.info.version,
            "hostname": self.info.hostname,
            "online": online,
            "last_heartbeat_s_ago": round(time.monotonic() - self.last_seen, 1),
            "attached_at": self.attached_at,
            "containers": list(s.containers) if s else [],
            "backlog_bytes": s.backlog_bytes if s else 0,
            "backlog_batches": s.backlog_batches if s else 0,
            "metrics": dict(s.metrics) if s else {},
            # an agent's uplinks as it reports them (they go to the workers, not through here)
            "uplinks": {
                u.topology: {**dict(u.metrics), "connected": 1.0 if online and u.connected else 0.0}
                for u in (s.uplinks if s else [])
            },
            "error": self.error,
            # what the node says of itself; an offline node's last word may be stale
            "health": (s.health or "ok") if s else "unknown",
            "reasons": list(s.reasons) if s else [],
        }


MAX_NODE_METRICS = 20_000
"""The most metric entries kept of one node's status report (each key at most
``MAX_METRIC_KEY`` characters): what a node reports reaches every /metrics scrape and
console snapshot, so a careless or hostile one must not grow them without end."""
MAX_METRIC_KEY = 300


def _bound_metrics(status: pb.NodeStatus) -> None:
    """Keep ``status``'s metrics within the bounds above (the rest is dropped, and said)."""
    metrics = status.metrics
    long = [k for k in metrics if len(k) > MAX_METRIC_KEY]
    for key in long:
        del metrics[key]
    extra = len(metrics) - MAX_NODE_METRICS
    if extra > 0:
        for key in sorted(metrics)[MAX_NODE_METRICS:]:
            del metrics[key]
    if long or extra > 0:
        dropped = len(long) + max(extra, 0)
        status.reasons.append(f"the master dropped {dropped} of its metrics (over its bounds)")
        if status.health in ("", "ok"):
            status.health = "degraded"


class Nodes:
    """The registry: a ``NodeRecord`` per node id, and the nodes' identities."""

    def __init__(
        self,
        attached: Callable[[str], None],
        gives: Callable[[str, str, str, int], bool],
    ) -> None:
        """``attached(node_id)``: queue what the deployments give a node that has just
        (re)attached (``send`` reaches it by then). ``gives(kind, node_id, topology,
        container)``: whether they give that node that container (an agent: container 0,
        the topology's edge subgraph)."""
        self.records: dict[str, NodeRecord] = {}
        self.enrolment: Enrolment | None = None  # None: insecure (serve() sets it)
        self.epoch = 0  # the leader epoch stamped on every order (0: no standbys)
        self._attached = attached
        self._gives = gives

    def send(self, node_id: str, command: pb.NodeCommand) -> None:
        """Queue ``command`` on ``node_id``'s session (dropped while it is not attached)."""
        record = self.records.get(node_id)
        if record is not None and record.queue is not None:
            record.queue.put_nowait(command)

    def workers(self) -> list[str]:
        """The attached workers, by id."""
        return sorted(
            n for n, r in self.records.items() if r.info.kind == "worker" and r.queue is not None
        )

    def online(self, node_id: str) -> bool:
        record = self.records.get(node_id)
        return record is not None and bool(record.view()["online"])

    # -- sessions ----------------------------------------------------------------
    async def attach(self, info: pb.NodeInfo) -> AsyncIterator[pb.NodeCommand]:
        queue: asyncio.Queue[pb.NodeCommand] = asyncio.Queue()
        record = self.records.get(info.node_id)
        if record is None:
            record = self.records[info.node_id] = NodeRecord(info)
        record.info, record.queue, record.last_seen = info, queue, time.monotonic()
        record.attached_at = time.time()
        log.info("%s %s attached (labels %s)", info.kind, info.node_id, dict(info.labels))
        if info.kind == "worker" and self.enrolment is not None and self.enrolment.revoked:
            queue.put_nowait(self._revoked_command())
        self._attached(info.node_id)  # what it ran before, then what waits
        try:
            while True:
                command = await queue.get()
                if command.WhichOneof("command") is None:
                    return  # revoked: the session ends
                command.leader_epoch = self.epoch
                yield command
        finally:
            if record.queue is queue:
                record.queue = None
            log.info("%s %s detached", info.kind, info.node_id)

    def _revoked_command(self) -> pb.NodeCommand:
        assert self.enrolment is not None
        return pb.NodeCommand(revoked=pb.Revoked(node_ids=sorted(self.enrolment.revoked)))

    def revoke(self, node_id: str) -> None:
        """Cut a node off: its certificate is refused from now on, its session ends, and every
        worker is told (their stream managers refuse its uplinks and peer links)."""
        if self.enrolment is None:
            raise HeadwaterError("the master runs --insecure: there are no identities to revoke")
        problem = node_id_problem(node_id)
        if problem is not None:
            raise HeadwaterError(problem)
        self.enrolment.revoke(node_id)
        record = self.records.get(node_id)
        if record is not None and record.queue is not None:
            record.queue.put_nowait(pb.NodeCommand())  # ends its session
        for other in self.workers():
            self.send(other, self._revoked_command())

    # -- reports -----------------------------------------------------------------
    def report(self, status: pb.NodeStatus) -> None:
        record = self.records.get(status.node_id)
        if record is not None:
            _bound_metrics(status)
            record.status = status
            record.last_seen = time.monotonic()
            record.error = status.error
            self._reconcile(record, status)

    def _reconcile(self, record: NodeRecord, status: pb.NodeStatus) -> None:
        """Stop what a node runs that the master no longer gives it.

        An agent resumes its edge subgraphs from its own disk, so one that was
        offline when its topology was killed still runs it; so would a node
        forgotten and back. Its status names what it runs: each container the
        master did not order it to run gets a stop order.
        """
        if record.queue is None:
            return  # not attached (yet): its orders come when it is
        node_id = record.info.node_id
        for name in status.containers:
            topology, _, number = name.rpartition("/")
            if not number.isdigit():
                continue
            if not self._gives(record.info.kind, node_id, topology, int(number)):
                log.warning(
                    "%s %s runs %s, which the master does not give it: stopping it",
                    record.info.kind,
                    node_id,
                    name,
                )
                record.queue.put_nowait(
                    pb.NodeCommand(stop=pb.StopContainer(topology=topology, container=int(number)))
                )

    # -- forgetting --------------------------------------------------------------
    def check_offline(self, node_id: str, known: bool) -> None:
        """Raise KeyError when there is no record of ``node_id`` and the deployments do not
        name it either (``known``), HeadwaterError while it is online."""
        record = self.records.get(node_id)
        if record is None and not known:
            names = ", ".join(sorted(self.records)) or "none"
            raise KeyError(f"no node {node_id!r} (known: {names})")
        if record is not None and record.view()["online"]:
            raise HeadwaterError(
                f"node {node_id!r} is online; stop it first (a node is "
                f"forgotten once it is offline)"
            )

    def forget(self, node_id: str) -> None:
        """Drop ``node_id``'s record and its enrolment (``Master.forget`` checks it may go)."""
        self.records.pop(node_id, None)
        if self.enrolment is not None:
            self.enrolment.forget(node_id)  # its id may enrol again
        log.info("forgot node %s", node_id)
