"""The topology revisions a container can run: the one it started with, and each live edit.

A live edit sends a revision (its package and physical plan) ahead of the
checkpoint it switches at. ``LoadedRevisions.load`` unpacks and loads it once
(raising if the new code does not load, which refuses the edit); ``use``
makes one the running revision and routes the stream manager by its plan.
A restore names the revision to run, so a failed edit rolls back as any
failure does.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .._sandbox import RunAs
from .._unpacked import fresh
from ..api import Topology
from ..plan import (
    InstancePlacement,
    PhysicalPlan,
    for_domain,
    load_topology,
    plan_to_json,
    restrict,
    validate,
)
from ..plan._child_loader import load_isolated_blocking
from ..wire.proto import runtime_pb2 as pb
from ._stmgr import StreamManager

TopologyLoader = Callable[
    [str | os.PathLike[str], str | None, str | None, Mapping[str, str] | None], Topology
]
"""``load_topology``'s shape: (file, name, domain, labels) -> the topology."""


def topology_loader(run_as: RunAs | None) -> TopologyLoader:
    """How a container loads its topology's files: itself, or (``run_as``) as a code-free
    skeleton from a child process that runs as that user."""
    if run_as is None:
        return load_topology

    def load(
        path: str | os.PathLike[str],
        name: str | None = None,
        domain: str | None = None,
        labels: Mapping[str, str] | None = None,
    ) -> Topology:
        file = Path(path)
        whole = load_isolated_blocking(file.parent, file.name, name=name, run_as=run_as)
        return for_domain(whole, domain, labels) if domain else whole

    return load


@dataclass(frozen=True)
class Revision:
    """A topology revision this container can run."""

    topology: Topology
    plan: PhysicalPlan
    file: str  # the topology file
    plan_file: str | None  # task ids, for revisions after the first


class LoadedRevisions:
    def __init__(
        self,
        first: Revision,
        container: int,
        workdir: Path,
        name: str | None,
        stmgr: StreamManager,
        domain: str | None = None,
        labels: dict[str, str] | None = None,
        loader: TopologyLoader = load_topology,
    ) -> None:
        self._known = {1: first}
        self._loader = loader  # the container's: in a child process, as its topology's user
        self.current = 1  # the one running (the first: what the container started with)
        self._container = container
        self._workdir = workdir
        self.name = name  # the topology's name in its file, if the file holds several
        self._stmgr = stmgr
        self.domain = domain  # the checkpoint domain this container runs (None: the whole)
        self.labels = dict(labels or {})  # the agent's labels (edge)

    @property
    def running(self) -> Revision:
        return self._known[self.current]

    @property
    def local_tasks(self) -> list[int]:
        return sorted(i.task_id for i in self.running.plan.in_container(self._container))

    def get(self, revision: int) -> Revision | None:
        return self._known.get(revision)

    def use(self, revision: int) -> None:
        """Run ``revision`` (known): route by its plan from now on."""
        rev = self._known[revision]
        self.current = revision
        self._stmgr.set_plan(rev.topology, rev.plan)

    def load(self, r: pb.Revision) -> Revision:
        """Unpack and load revision ``r`` (once); raise if its code does not load."""
        known = self._known.get(r.revision)
        if known is not None:
            return known
        first = self._known[1]
        home = self._workdir / f"rev-{r.revision}"
        code = fresh(r.package_data, r.package, home / "code")  # never over an older copy
        plan = PhysicalPlan(
            first.topology.name,
            first.plan.containers,
            tuple(
                InstancePlacement(i.task_id, i.component, i.component_index, i.container)
                for i in r.plan.instances
            ),
        )
        loaded = self._loader(code / r.entry, self.name, self.domain, self.labels)
        topology = restrict(loaded, plan)
        validate(topology)
        plan_file = home / "plan.json"
        plan_file.write_text(plan_to_json(plan))
        rev = Revision(topology, plan, str(code / r.entry), str(plan_file))
        self._known[r.revision] = rev
        return rev
