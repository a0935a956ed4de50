"""A lost worker's containers, dealt to the workers that share its checkpoint store.

A worker whose checkpoint store is shared (``headwater worker --checkpoint-store
s3://...``) names it when it attaches (``NodeInfo.checkpoint_store``). Once
such a worker has been offline for ``after`` seconds (``headwater master
--failover-after``), each of its containers goes to the online worker that names
the same store and runs the fewest containers (ties by id): it starts there,
registers with its topology master as a restarted container, and restores the
last complete checkpoint from the shared store (``common/state/_shared_store.py``).

A worker whose store is its own disk keeps its containers while it is away: their
state is there and nowhere else, so they wait for it. So does a worker the master
has not heard from since the master started (it does not know its store). One
that comes back after its containers moved is told to stop them (``Nodes``
reconciles what a node runs with what it is given).

Called on the master's event loop (``tick``, every second by ``run``); nothing blocks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from ._deployments import Deployment
from ._nodes import NODE_OFFLINE_AFTER_S, NodeRecord

log = logging.getLogger("headwater.master")
FAILOVER_AFTER_S = 30.0
"""How long a worker with a shared checkpoint store may be offline before its containers move."""


class FailoverPort(Protocol):
    """What the failover asks of the master (``NodeOrders``, and the registry's records)."""

    @property
    def deployments(self) -> Mapping[str, Deployment]: ...

    def run(self, dep: Deployment, container: int) -> None: ...

    def save(self) -> None: ...


class Failover:
    """Moves the containers of workers gone for ``after`` seconds (``tick``)."""

    def __init__(
        self,
        port: FailoverPort,
        records: Mapping[str, NodeRecord],
        after: float = FAILOVER_AFTER_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.port = port
        self.records = records
        self.after = after
        self._clock = clock

    def _online(self, record: NodeRecord, now: float) -> bool:
        return record.queue is not None and now - record.last_seen < NODE_OFFLINE_AFTER_S

    def tick(self) -> None:
        now = self._clock()
        load: dict[str, int] = {}
        for dep in self.port.deployments.values():
            for node in dep.assignment.values():
                load[node] = load.get(node, 0) + 1
        moved = False
        for dep in list(self.port.deployments.values()):
            for container, node in sorted(dep.assignment.items()):
                record = self.records.get(node)
                if record is None or self._online(record, now):
                    continue
                store = record.info.checkpoint_store
                if not store or now - record.last_seen < self.after:
                    continue
                peers = [
                    n
                    for n, r in self.records.items()
                    if r.info.kind == "worker"
                    and r.info.checkpoint_store == store
                    and self._online(r, now)
                ]
                if not peers:
                    continue  # none shares its store: it waits (said once it moves)
                target = min(peers, key=lambda n: (load.get(n, 0), n))
                dep.assignment[container] = target
                load[target] = load.get(target, 0) + 1
                load[node] -= 1
                log.warning(
                    "worker %s has been offline for %.0fs: container %d of %r moves to %s, "
                    "which shares its checkpoint store (%s)",
                    node,
                    now - record.last_seen,
                    container,
                    dep.name,
                    target,
                    store,
                )
                self.port.run(dep, container)
                moved = True
        if moved:
            self.port.save()

    async def run(self) -> None:
        """``tick`` every second, until cancelled."""
        while True:
            await asyncio.sleep(1.0)
            try:
                self.tick()
            except Exception:  # a bug here must not end the loop: failover is a safety net
                log.exception("failover")
