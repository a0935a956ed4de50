"""Where a topology's cloud containers run: the scheduler interface and the worker scheduler.

The master keeps, per deployment, which node runs each cloud container
(``Deployment.assignment``) and sends that node its orders when it attaches.
A scheduler decides the assignment and, if it starts nodes itself, starts and
removes them:

- ``WorkerScheduler`` (the default, for bare hosts): deals each container to
  the least loaded ``headwater worker`` attached (``deal``: fewest containers
  of all topologies, ties by id); a worker that attaches later takes the
  containers still waiting. Containers that wait are dealt once no new worker
  has attached for ``placement_delay`` seconds (3 s; ``headwater master
  --placement-delay``), as Kafka delays a group's first rebalance: workers that
  start together (a compose cluster's, after its first submit) each get a share
  instead of the first to attach taking all. A dealt container stays on its
  worker. It starts nothing; a container's logs are asked of the worker that
  runs it (``_node_logs.py``).
- ``DockerScheduler`` (``cloud/master/_docker.py``, ``headwater master
  --scheduler docker``): one Docker container per cloud container, each an
  ordinary worker whose node id is pinned to that container.

Every method is called on the master's event loop and must not block. A
scheduler asks the master through ``SchedulerPort`` (the master's
``NodeOrders``, ``_node_orders.py``): the deployments, the attached workers,
a container's run order to the node it was assigned, the record saved.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Protocol

from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Topology

from ._deployments import Deployment

PLACEMENT_DELAY_S = 3.0
"""How long containers that wait for a worker wait after a new worker attaches, for the
others starting with it (``WorkerScheduler``)."""


class LogsError(HeadwaterError):
    """A log that cannot be served; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


class Workers(Protocol):
    """The node registry as a scheduler sees it (``Nodes``)."""

    def workers(self) -> list[str]:
        """The ids of the attached workers."""
        ...

    def online(self, node_id: str) -> bool: ...


class SchedulerPort(Protocol):
    """What a scheduler asks of the master (``NodeOrders``): nothing here blocks."""

    @property
    def deployments(self) -> Mapping[str, Deployment]: ...

    @property
    def nodes(self) -> Workers: ...

    def run(self, dep: Deployment, container: int) -> None:
        """Order the node ``dep`` assigns ``container`` to run it."""

    def stop(self, node_id: str, topology: str, container: int) -> None:
        """Order ``node_id`` to stop ``topology``'s ``container``."""

    def save(self) -> None:
        """Keep the deployments' record (after an assignment changed)."""

    def schedule_all(self) -> None:
        """Deal what waits in every deployment."""


class Scheduler(Protocol):
    """What the master asks of a scheduler (on its event loop; nothing here blocks)."""

    name: str

    def check(self, topology: Topology) -> None:
        """Refuse (HeadwaterError) a topology this scheduler cannot run, before it starts."""

    def place(self, dep: Deployment) -> None:
        """Assign ``dep``'s unassigned cloud containers (and start what runs them)."""

    def removed(self, name: str) -> None:
        """Topology ``name`` was killed: stop what was started for it."""

    async def logs(self, dep: Deployment, container: int, tail: int) -> dict[str, Any]:
        """The log of ``dep``'s ``container``: its last ``tail`` lines; LogsError if none."""


def deal(waiting: Iterable[int], load: dict[str, int]) -> dict[int, str]:
    """Which worker of ``load`` (worker -> containers it runs, of every topology) each
    ``waiting`` container goes to: one at a time to the least loaded, ties by id, so the
    outcome depends on nothing else. ``load`` is counted up as containers are dealt."""
    out: dict[int, str] = {}
    for container in waiting:
        node = min(load, key=lambda w: (load[w], w))
        out[container] = node
        load[node] += 1
    return out


class WorkerScheduler:
    """Deal containers to the attached ``headwater worker`` nodes, the least loaded first."""

    name = "worker"

    def __init__(
        self,
        master: SchedulerPort,
        placement_delay: float = PLACEMENT_DELAY_S,
        clock: Callable[[], float] = time.monotonic,
        *,
        logs: Callable[[Deployment, int, int], Awaitable[dict[str, Any]]],
    ) -> None:
        """``placement_delay``: seconds without a new worker before waiting containers are
        dealt (0: at once). ``logs``: a container's logs, asked of its worker
        (``NodeLogs.fetch``)."""
        self.master = master
        self._logs = logs
        self.placement_delay = placement_delay
        self._clock = clock
        self._seen: set[str] = set()  # workers attached since the master started
        self._settled_at = 0.0  # when no new worker will have attached for placement_delay
        self._timer: asyncio.TimerHandle | None = None

    def check(self, topology: Topology) -> None:
        return None

    def load(self, workers: Iterable[str]) -> dict[str, int]:
        """How many containers of every deployment each of ``workers`` is given."""
        load = dict.fromkeys(workers, 0)
        for dep in self.master.deployments.values():
            for node in dep.assignment.values():
                if node in load:
                    load[node] += 1
        return load

    def place(self, dep: Deployment) -> None:
        workers = self.master.nodes.workers()
        new = set(workers) - self._seen
        if new:
            self._seen |= new
            self._settled_at = self._clock() + self.placement_delay
        waiting = [c for c in range(dep.containers) if c not in dep.assignment]
        if not workers or not waiting:
            return
        wait = self._settled_at - self._clock()
        if wait > 0:  # workers are still arriving: deal once they have
            if self._timer is None:
                self._timer = asyncio.get_running_loop().call_later(wait, self._settle)
            return
        for container, node in deal(waiting, self.load(workers)).items():
            dep.assignment[container] = node
            self.master.run(dep, container)

    def _settle(self) -> None:
        self._timer = None
        self.master.schedule_all()  # a worker that came meanwhile puts it off again

    def removed(self, name: str) -> None:
        return None  # kill sends the stop orders

    async def logs(self, dep: Deployment, container: int, tail: int) -> dict[str, Any]:
        """Asked of the worker that runs the container, over its session (``_node_logs.py``)."""
        return await self._logs(dep, container, tail)
