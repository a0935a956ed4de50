"""Submissions: a topology's package taken in, checked, loaded in a child process and started.

What a submission brings is untrusted input: the package is bounded and
checked before it is stored or unpacked (``check_package``), the entry must
name a file inside it, the topology's and its components' names must be safe
names (they become folders here and on every node), the number of containers
is bounded (``MAX_CONTAINERS``), and a package whose submission is refused is
not kept. The file is loaded in a child process (``TopologyCode.load``),
awaited; the master keeps only the topology's description. ``resume`` starts
again every deployment the record keeps, after a restart of the master or when a
standby takes over (its packages fetched from the shared blob store if they are not
on this master's disk).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from headwater.common._exceptions import HeadwaterError
from headwater.common._ids import name_problem
from headwater.common._package import check_package, entry_problem
from headwater.common.api import Topology
from headwater.common.plan import cloud_part, validate
from headwater.common.statemgr import StateError

from ._code import TopologyCode
from ._deployments import MAX_CONTAINERS, Deployment, Deployments, topology_name_problem

log = logging.getLogger("headwater.master")


class Submissions:
    """Take submitted topologies in and start them (on the master's event loop)."""

    def __init__(
        self,
        code: TopologyCode,
        book: Deployments,
        *,
        check: Callable[[Topology], None],
        spark_named: Callable[[str], bool],
        schedule: Callable[[Deployment], None],
    ) -> None:
        """``check``: the scheduler's (refuse what it cannot run); ``spark_named``: whether a
        Spark job takes that name; ``schedule``: deal a started deployment's containers."""
        self.code = code
        self.book = book
        self._check = check
        self._spark_named = spark_named
        self._schedule = schedule

    async def resume(self) -> None:
        """Recreate the topology masters of every persisted deployment (loading their files in
        child processes, one at a time)."""
        for dep in self.book.recorded():
            try:  # a package that is not here comes from the shared blob store, if any
                await self.code.fetched(dep.package)
                self.book.begin(dep, await self.book.revisions_described(dep))
            except HeadwaterError as exc:
                log.error("cannot resume topology %r: %s; held in the record", dep.name, exc)
                self.book.hold(dep, f"not resumed: {exc}")

    async def submit(self, data: bytes, entry: str, containers: int) -> dict[str, Any]:
        """Store and validate a package, start its topology master, schedule its containers.

        Raises HeadwaterError (PackageRefusedError for a package out of bounds or not a zip,
        TopologyLoadError for a file that does not load within ``load_limits``) when the
        submission is refused; a package stored for it alone is deleted again. The file is
        loaded in a child process, awaited: the event loop serves meanwhile."""
        if not 1 <= containers <= MAX_CONTAINERS:
            raise HeadwaterError(f"containers must be from 1 to {MAX_CONTAINERS}, got {containers}")
        problem = entry_problem(entry)
        if problem is not None:
            raise HeadwaterError(problem)
        check_package(data)
        # kept (in the shared blob store too) before the submission goes on; dropped if it
        # is refused and nothing else uses it
        async with self.code.kept(data) as (digest, _):
            return await self._submit(digest, entry, containers)

    async def _submit(self, digest: str, entry: str, containers: int) -> dict[str, Any]:
        code = self.code.unpack(digest)
        if not (code / entry).is_file():
            raise HeadwaterError(f"the package has no file {entry!r}; submit the topology file")
        topology = await self.code.load(digest, entry)
        problem = topology_name_problem(topology.name) or next(
            filter(None, (name_problem(c.name, "component name") for c in topology.components)),
            None,
        )
        if problem is not None:
            raise HeadwaterError(problem)
        validate(topology)
        cloud = cloud_part(topology)
        if not cloud.components:
            raise HeadwaterError(
                f"topology {topology.name!r} has no cloud component: a master runs topologies "
                "that end in the cloud; run an edge-only one with `headwater run`"
            )
        validate(cloud)
        self._check(topology)
        selectors = [dict(c.placement.selector) for c in topology.components if c.placement.is_edge]
        dep = Deployment(topology.name, digest, entry, containers, selectors=selectors)
        described = await self.book.revisions_described(dep, topology)
        if topology.name in self.book.deployments:  # checked after the last await
            raise HeadwaterError(
                f"topology {topology.name!r} is already running; kill it first "
                f"(`headwater kill {topology.name}`)"
            )
        if topology.name in self.book.held:
            why = self.book.held[topology.name][1]
            raise HeadwaterError(
                f"topology {topology.name!r} is held in the record ({why}); kill it first "
                f"(`headwater kill {topology.name}`)"
            )
        if self._spark_named(topology.name):
            raise HeadwaterError(  # a worker would run both as one user, in one cgroup
                f"a Spark job is named {topology.name!r}: a topology takes a name no Spark job has"
            )
        self.book.begin(dep, described)
        self._schedule(dep)
        try:  # kept (ZooKeeper acknowledged it) before the submission is answered
            self.book.save()
        except StateError:
            self.book.withdraw(dep.name)
            raise
        log.info("submitted %r (%s, %d containers)", dep.name, digest[:19], containers)
        return {"topology": dep.name, "package": digest, "containers": containers}
