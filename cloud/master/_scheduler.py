"""Where a topology's cloud containers run: the scheduler interface and the worker scheduler.

The master keeps, per deployment, which node runs each cloud container
(``Deployment.assignment``) and sends that node its orders when it attaches.
A scheduler decides the assignment and, if it starts nodes itself, starts and
removes them:

- ``WorkerScheduler`` (the default, for bare hosts): deals each container to
  the least loaded ``headwater worker`` attached; a worker that attaches later
  takes the containers still waiting. It starts nothing; a container's logs
  are asked of the worker that runs it (``_node_logs.py``).
- ``DockerScheduler`` (``cloud/master/_docker.py``, ``headwater master
  --scheduler docker``): one Docker container per cloud container, each an
  ordinary worker whose node id is pinned to that container.

Every method is called on the master's event loop and must not block.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Topology

if TYPE_CHECKING:
    from ._master import Deployment, Master


class LogsError(HeadwaterError):
    """A log that cannot be served; ``status`` is the HTTP status that says why."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status


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


class WorkerScheduler:
    """Deal containers to the attached ``headwater worker`` nodes, the least loaded first."""

    name = "worker"

    def __init__(self, master: Master) -> None:
        self.master = master

    def check(self, topology: Topology) -> None:
        return None

    def place(self, dep: Deployment) -> None:
        workers = self.master.nodes.workers()
        if not workers:
            return
        load = {w: 0 for w in workers}
        for node in dep.assignment.values():
            if node in load:
                load[node] += 1
        for c in range(dep.containers):
            if c not in dep.assignment:
                node = min(workers, key=lambda w: (load[w], w))
                dep.assignment[c] = node
                load[node] += 1
                self.master.nodes.send(node, self.master._run_command(dep, c))

    def removed(self, name: str) -> None:
        return None  # kill sends the stop orders

    async def logs(self, dep: Deployment, container: int, tail: int) -> dict[str, Any]:
        """Asked of the worker that runs the container, over its session (``_node_logs.py``)."""
        return await self.master.node_logs.fetch(dep, container, tail)
