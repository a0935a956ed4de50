"""The master: hosts a topology master per submitted topology and schedules containers on nodes.

Nodes (cloud workers and edge agents) dial the master and attach: they
announce themselves and receive commands on the attach stream (run or stop a
container); the master never dials a node. Who is attached, what each reports
and its identity are the node registry's (``Nodes`` in ``_nodes.py``); here are
the deployments, and what they give each node. A submitted topology's package
is stored by its hash; its containers are dealt to the attached workers, and a
worker that attaches later takes the containers still waiting. Deployments are
persisted, so a restarted master resumes every topology and re-sends each node
its containers when it re-attaches; a node that reports running a container it
is not given is told to stop it.

The master is control only: an agent's uplink goes straight to the stream
manager of the container that runs the receiver (its ingress); the master
only says where that is (``locate``), and shows the uplinks' state as the
agents report it.

What a submission or an edit brings is untrusted input: the package is
bounded and checked before it is stored or unpacked (``check_package``), the
entry must name a file inside it, the topology's and its components' names
must be safe names (they become folders here and on every node), the number
of containers is bounded (``MAX_CONTAINERS``), and a package whose submission
is refused is not kept. The master never runs the submitted file itself: a
child process loads it, bounded in time and memory (``load_isolated``,
``LoadLimits``), and the master keeps only the topology's description, as a
skeleton, while its event loop goes on serving. Skeletons of the files a
topology's revisions run are kept (``TopologyCode`` in ``_code.py``, which
stores the packages too) for its topology master, which may need an older
revision's plan at any time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from headwater.common._exceptions import HeadwaterError, PackageMismatchError, TopologyLoadError
from headwater.common._ids import name_problem
from headwater.common._package import check_package, entry_problem
from headwater.common.api import Placement, Topology
from headwater.common.control import TopologyMaster
from headwater.common.control._revisions import (
    EditError,
    RevisionRecord,
    StaleRevisionError,
    check_edit,
    touches_edge,
    without,
)
from headwater.common.plan import cloud_part, pack_round_robin, validate
from headwater.common.plan._child_loader import LoadLimits
from headwater.common.plan._package_parallelism import package_with_parallelism
from headwater.common.security import TokenStore
from headwater.common.security._files import write_private
from headwater.common.wire.proto import runtime_pb2 as pb

from ._code import TopologyCode
from ._models import ModelRegistry
from ._node_logs import NodeLogs
from ._nodes import Nodes
from ._rollout import Rollouts
from ._scheduler import PLACEMENT_DELAY_S, Scheduler, WorkerScheduler
from ._spark_jobs import SparkJobs
from ._traffic import TrafficCounter

log = logging.getLogger("headwater.master")
MAX_CONTAINERS = 256
"""The most containers one topology may ask for."""


def topology_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a topology (it names folders), or None if it can."""
    return name_problem(name, "topology name")


@dataclass
class Deployment:
    name: str
    package: str
    entry: str
    containers: int
    assignment: dict[int, str] = field(default_factory=dict)  # container -> node id
    agents: list[str] = field(default_factory=list)  # agents running its edge subgraph
    selectors: list[dict[str, str]] = field(default_factory=list)  # of its edge components
    state: str = "RUNNING"  # activate/deactivate, for the cloud and every agent
    # the newest revision that changed edge components (every agent switches to it)
    edge_revision: dict[str, Any] = field(default_factory=dict)


class Master:
    def __init__(
        self,
        state_dir: str | Path,
        grpc_address: str = "",
        *,
        load_limits: LoadLimits | None = None,
        placement_delay: float = PLACEMENT_DELAY_S,
    ) -> None:
        """``load_limits``: what loading one submitted file (in a child process) may take
        (``LoadLimits()``: 30 s and 1 GiB). ``placement_delay``: how long containers that
        wait for a worker wait after a new worker attaches, for others starting with it
        (``WorkerScheduler``)."""
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.code = TopologyCode(
            self.state_dir,
            load_limits or LoadLimits(),
            lambda digest: any(d.package == digest for d in self.deployments.values()),
        )
        self.packages = self.code.packages
        self.grpc_address = grpc_address
        self.deployments: dict[str, Deployment] = {}
        self.tms: dict[str, TopologyMaster] = {}
        self._coordinators: dict[str, asyncio.Task[None]] = {}
        self.nodes = Nodes(self._attached, self._gives)  # the nodes, their sessions and reports
        self.traffic = TrafficCounter()  # serve() puts the one on its gRPC server here
        # the REST API's tokens and the join tokens; the first start makes an admin token
        self.tokens = TokenStore(self.state_dir / "tokens.json")
        self.join_port: int = 0  # the enrolment port (0: insecure, nodes need no token)
        self.ca_fingerprint: str = ""
        # the REST API's URL as a worker's Spark job reaches it (registering models); serve()
        # sets it once the API listens
        self.http_url: str = ""
        if not self.tokens.path.exists():
            admin = self.tokens.create("admin", description="made at the master's first start")
            write_private(self.state_dir / "admin.token", f"{admin}\n".encode())
            log.info("an admin token for the REST API is in %s", self.state_dir / "admin.token")
        self.models = ModelRegistry(self.state_dir / "models")
        self.rollouts = Rollouts(self, self.models, self.state_dir / "rollouts.json")
        # where cloud containers run: attached workers, unless serve() sets another
        self.scheduler: Scheduler = WorkerScheduler(self, placement_delay)
        self.node_logs = NodeLogs(self)  # container logs asked of the nodes that run them
        self.spark_jobs = SparkJobs(self, load_limits or LoadLimits())  # _spark_jobs.py

    # -- deployments -------------------------------------------------------------
    def _record_path(self) -> Path:
        return self.state_dir / "deployments.json"

    def _save(self) -> None:
        tmp = self._record_path().with_suffix(".tmp")
        tmp.write_text(json.dumps([asdict(d) for d in self.deployments.values()]))
        tmp.replace(self._record_path())

    async def resume(self) -> None:
        """Recreate the topology masters of every persisted deployment (loading their files in
        child processes, one at a time)."""
        if not self._record_path().exists():
            return
        for d in json.loads(self._record_path().read_text()):
            problem = topology_name_problem(d["name"]) or entry_problem(d["entry"])
            if problem is not None:
                log.error("not resuming a deployment: %s", problem)
                continue
            dep = Deployment(
                d["name"],
                d["package"],
                d["entry"],
                d["containers"],
                {int(k): v for k, v in d["assignment"].items()},
                d.get("agents", []),
                d.get("selectors", []),
                d.get("state", "RUNNING"),
                d.get("edge_revision", {}),
            )
            try:
                await self._start_topology(dep)
            except HeadwaterError as exc:
                log.error("cannot resume topology %r: %s", dep.name, exc)

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
        digest, fresh = self.code.store(data)
        try:
            with self.code.holding(digest):
                return await self._submit(digest, entry, containers)
        except BaseException:
            if fresh:
                self.code.drop(digest)
            raise

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
        self.scheduler.check(topology)
        selectors = [dict(c.placement.selector) for c in topology.components if c.placement.is_edge]
        dep = Deployment(topology.name, digest, entry, containers, selectors=selectors)
        described = await self._revisions_described(dep, topology)
        if topology.name in self.deployments:  # checked after the last await: no one slips in
            raise HeadwaterError(
                f"topology {topology.name!r} is already running; kill it first "
                f"(`headwater kill {topology.name}`)"
            )
        if self.spark_jobs.named(topology.name):
            raise HeadwaterError(  # a worker would run both as one user, in one cgroup
                f"a Spark job is named {topology.name!r}: a topology takes a name no Spark job has"
            )
        self._begin(dep, described)
        self._schedule(dep)
        self._save()
        log.info("submitted %r (%s, %d containers)", dep.name, digest[:19], containers)
        return {"topology": dep.name, "package": digest, "containers": containers}

    async def _start_topology(self, dep: Deployment) -> None:
        self._begin(dep, await self._revisions_described(dep))

    async def _revisions_described(
        self, dep: Deployment, whole: Topology | None = None
    ) -> dict[tuple[str, str], Topology]:
        """The skeletons of the files ``dep``'s revisions run (``whole``: its first file's)."""
        topologies = self.state_dir / "topologies"
        return await self.code.of_revisions(dep.name, (dep.package, dep.entry), topologies, whole)

    def described(self, package: str, entry: str) -> Topology | None:
        """The whole topology (package, entry) defines, as a skeleton, if it is kept: the
        files of running topologies' revisions are."""
        return self.code.described(package, entry)

    def _begin(self, dep: Deployment, described: dict[tuple[str, str], Topology]) -> None:
        """Start ``dep``'s topology master (no await: the caller checked its name just now)."""
        self.code.remember(described)  # its topology master may load any revision now
        topology = cloud_part(described[(dep.package, dep.entry)])
        plan = pack_round_robin(topology, dep.containers)
        try:
            tm = TopologyMaster(
                topology,
                plan,
                self.state_dir / "topologies" / dep.name,
                dep.package,
                dep.entry,
                self.code.load_revision,
            )
        except BaseException:
            self._forget_described()
            raise
        tm.user_state = dep.state
        self.deployments[dep.name] = dep
        self.tms[dep.name] = tm
        self._coordinators[dep.name] = asyncio.get_running_loop().create_task(tm.run_coordinator())

    def _forget_described(self) -> None:
        """Keep the skeletons of running topologies' revisions only."""
        self.code.keep_only(
            (r.package, r.entry) for t in self.tms.values() for r in t.revlog.records
        )

    # -- live edits --------------------------------------------------------------
    async def edit(
        self,
        name: str,
        action: str,
        base: int,
        data: bytes | None = None,
        entry: str | None = None,
        components: list[str] | None = None,
        author: str = "",
        to: int | None = None,
        parallelism: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """Validate an edit of a running topology and start applying it.

        ``action`` is attach, replace or remove (``data``: the package as it now
        is; a remove may leave it out and name the components) or rollback
        (``to``: the revision whose code to run again); a replace with ``parallelism``
        (component -> instances) and no package runs the current code at that parallelism. Raises
        StaleRevisionError when ``base`` is not the current revision and
        EditError when the edit is not valid; either way nothing changes (a
        package sent for a refused edit alone is deleted again). The files are
        loaded in child processes, awaited, as a submission's are.
        """
        problem = topology_name_problem(name)
        if problem is not None:
            raise EditError(problem)
        if parallelism:
            data, entry, components = await self._rescaled(name, action, base, data, parallelism)
        if data:
            check_package(data)
            digest, fresh = self.code.store(data)
            try:
                with self.code.holding(digest):
                    return await self._edit(
                        name, action, base, digest, entry, components, author, to
                    )
            except BaseException:
                if fresh:
                    self.code.drop(digest)
                raise
        return await self._edit(name, action, base, None, entry, components, author, to)

    async def _rescaled(
        self, name: str, action: str, base: int, data: bytes | None, parallelism: dict[str, int]
    ) -> tuple[bytes, str, list[str]]:
        """A replace that changes only parallelism: the current package with those
        components' parallelism set beside its file (``_package_parallelism``)."""
        if action != "replace" or data:
            raise EditError(
                "parallelism goes with a replace that sends no file (a new file says its own)"
            )
        tm = self.tms.get(name)
        if tm is None:
            known = ", ".join(sorted(self.deployments)) or "none"
            raise HeadwaterError(f"no topology named {name!r} (running: {known})")
        if base != tm.current:
            raise StaleRevisionError(base, tm.current)
        cur = tm.revisions[tm.current].record
        whole = self.code.described(cur.package, cur.entry)
        running = {c.name: c.parallelism for c in whole.components} if whole is not None else {}
        unknown = sorted(set(parallelism) - set(running))
        if whole is not None and unknown:
            raise EditError(f"topology {name!r} has no component {', '.join(unknown)}")
        if whole is not None and all(running[c] == n for c, n in parallelism.items()):
            runs = ", ".join(f"{c} {n}" for c, n in sorted(parallelism.items()))
            raise EditError(f"that is the parallelism running now ({runs}): nothing to change")
        try:  # a package may be tens of MiB: re-zipped off the event loop
            data = await asyncio.to_thread(
                package_with_parallelism, self.packages.get(cur.package), cur.entry, parallelism
            )
        except TopologyLoadError as exc:
            raise EditError(str(exc)) from None
        return data, cur.entry, sorted(parallelism)

    async def _edit(
        self,
        name: str,
        action: str,
        base: int,
        sent: str | None,
        entry: str | None,
        components: list[str] | None,
        author: str,
        to: int | None,
    ) -> dict[str, Any]:
        tm = self.tms.get(name)
        if tm is None:
            known = ", ".join(sorted(self.deployments)) or "none"
            raise HeadwaterError(f"no topology named {name!r} (running: {known})")
        if base != tm.current:
            raise StaleRevisionError(base, tm.current)
        components = list(components or [])
        cur = tm.revisions[tm.current].record
        if action == "rollback":
            target = tm.revlog.find(to or 0)
            if target is None or target.status not in ("applied",):
                raise EditError(
                    f"revision {to} was never applied; `headwater revisions "
                    f"{name}` lists the ones a rollback can return to"
                )
            digest, entry, exclude = target.package, target.entry, list(target.exclude)
        elif sent is not None:
            digest, entry = sent, entry or cur.entry
            exclude = list(cur.exclude)  # those the new file still has stay out
        elif action == "remove":
            digest, entry, exclude = cur.package, cur.entry, list(cur.exclude)
        else:
            raise EditError(f"{action} needs the topology file as it should now be")
        try:
            old = without(await self.code.logical(cur.package, cur.entry), cur.exclude)
            new_file = await self.code.logical(digest, entry)
        except HeadwaterError as exc:
            raise EditError(f"the edited topology does not load: {exc}") from exc
        if self.tms.get(name) is not tm:
            raise HeadwaterError(f"topology {name!r} was killed while the edit was loading")
        names = {c.name for c in new_file.components}
        exclude = [x for x in exclude if x in names]
        if action == "remove":
            exclude += [c for c in components if c in names and c not in exclude]
        new = without(new_file, exclude)
        diff = check_edit(action, components if action != "rollback" else (), old, new)
        cloud = cloud_part(new)
        cloud_names = {c.name for c in cloud.components}
        record = RevisionRecord(
            0, action, digest, entry, exclude, author, time.time(), diff.to_dict(), {}
        )
        replaced = tuple(n for n in diff.replaced if n in cloud_names)
        tm.propose(record, cloud, self.packages.get(digest), base, replaced)
        self.code.remember({(digest, entry): new_file})
        if touches_edge(old, new, diff):
            dep = self.deployments[name]
            dep.edge_revision = {
                "revision": record.revision,
                "action": action,
                "package": digest,
                "entry": entry,
                "exclude": exclude,
                "author": author,
            }
            self._save()
            for agent in dep.agents:  # one offline gets it when it re-attaches
                self.nodes.send(agent, self._revise_command(dep))
        return record.view()

    def agent_revisions(self, name: str) -> dict[str, int]:
        """Agent -> the revision its edge subgraph of ``name`` runs (as it last reported)."""
        dep = self.deployments.get(name)
        out: dict[str, int] = {}
        for agent in dep.agents if dep is not None else []:
            record = self.nodes.records.get(agent)
            status = record.status if record is not None else None
            if status is not None and f"revision:{name}" in status.metrics:
                out[agent] = int(status.metrics[f"revision:{name}"])
        return out

    def _revise_command(self, dep: Deployment) -> pb.NodeCommand:
        return pb.NodeCommand(revise=pb.Revise(topology=dep.name, **dep.edge_revision))

    def kill(self, name: str) -> None:
        problem = topology_name_problem(name)
        if problem is not None:
            raise EditError(problem)
        dep = self.deployments.pop(name, None)
        if dep is None:
            known = ", ".join(sorted(self.deployments)) or "none"
            raise HeadwaterError(f"no topology named {name!r} (running: {known})")
        self.tms.pop(name)
        self._coordinators.pop(name).cancel()
        self.scheduler.removed(name)
        for container, node_id in dep.assignment.items():
            self.nodes.send(
                node_id, pb.NodeCommand(stop=pb.StopContainer(topology=name, container=container))
            )
        for agent in dep.agents:
            self.nodes.send(
                agent, pb.NodeCommand(stop=pb.StopContainer(topology=name, container=0))
            )
        shutil.rmtree(self.state_dir / "topologies" / name, ignore_errors=True)
        self._save()
        self._forget_described()
        log.info("killed %r", name)

    # -- scheduling --------------------------------------------------------------
    def _schedule(self, dep: Deployment) -> None:
        """Deal unassigned containers to attached workers, edge subgraphs to matching agents."""
        for node_id, record in self.nodes.records.items():
            labels = record.info.labels
            if (
                record.info.kind == "agent"
                and record.queue is not None
                and node_id not in dep.agents
                and any(Placement("edge", sel).matches(labels) for sel in dep.selectors)
            ):
                dep.agents.append(node_id)
                self.nodes.send(node_id, self._run_command(dep, 0, edge=True))
                self.nodes.send(node_id, self._state_command(dep))
                if dep.edge_revision:
                    self.nodes.send(node_id, self._revise_command(dep))
                log.info("edge subgraph of %r goes to agent %s", dep.name, node_id)
        self._schedule_cloud(dep)
        self._save()

    def _schedule_cloud(self, dep: Deployment) -> None:
        self.scheduler.place(dep)

    def schedule_all(self) -> None:
        """Deal what waits in every deployment (the scheduler, once workers have arrived)."""
        for dep in list(self.deployments.values()):
            self._schedule(dep)

    def _run_command(self, dep: Deployment, container: int, edge: bool = False) -> pb.NodeCommand:
        return pb.NodeCommand(
            run=pb.RunContainer(
                topology=dep.name,
                container=container,
                containers=1 if edge else dep.containers,
                package=dep.package,
                entry=dep.entry,
                domain="edge" if edge else "cloud",
            )
        )

    def _state_command(self, dep: Deployment) -> pb.NodeCommand:
        return pb.NodeCommand(set_state=pb.SetState(topology=dep.name, state=dep.state))

    def set_state(self, name: str, state: str) -> None:
        """Activate or deactivate a topology: its cloud master did; now its agents."""
        dep = self.deployments.get(name)
        if dep is None:
            return
        dep.state = state
        self._save()
        for agent in dep.agents:
            self.nodes.send(agent, self._state_command(dep))

    # -- nodes: what the deployments give each (the registry is ``Nodes``) ------
    def _attached(self, node_id: str) -> None:
        """Queue for a node that has just (re)attached what it ran before; then deal what
        waits (it may take some)."""
        for dep in list(self.deployments.values()):
            for c, node in dep.assignment.items():
                if node == node_id:
                    self.nodes.send(node_id, self._run_command(dep, c))
            if node_id in dep.agents:
                self.nodes.send(node_id, self._run_command(dep, 0, edge=True))
                self.nodes.send(node_id, self._state_command(dep))
                if dep.edge_revision:
                    self.nodes.send(node_id, self._revise_command(dep))
            self._schedule(dep)

    def _gives(self, kind: str, node_id: str, topology: str, container: int) -> bool:
        """Whether a deployment gives ``node_id`` that container (an agent: its edge subgraph)."""
        dep = self.deployments.get(topology)
        return dep is not None and (
            dep.assignment.get(container) == node_id if kind != "agent" else node_id in dep.agents
        )

    def packages_of(self, node_id: str) -> set[str]:
        """The packages the master gave ``node_id`` to run (all it may fetch)."""
        out: set[str] = self.spark_jobs.packages_of(node_id)
        for dep in self.deployments.values():
            if node_id in dep.assignment.values():
                out.add(dep.package)
            if node_id in dep.agents:
                out.add(dep.package)
                if dep.edge_revision:
                    out.add(dep.edge_revision["package"])
        return out

    def forget(self, node_id: str) -> None:
        """Forget an offline node that holds no containers (its deployments drop it too).

        Raises KeyError for an unknown node and HeadwaterError while it is online
        or a topology's cloud containers are assigned to it (they would have
        nowhere to run). An agent's edge subgraphs are its own: forgetting it
        drops them from their deployments; if it comes back it attaches as any
        node does and is given them again.
        """
        held = sorted(
            f"{d.name}/{c}"
            for d in self.deployments.values()
            for c, n in d.assignment.items()
            if n == node_id
        )
        edge = [d for d in self.deployments.values() if node_id in d.agents]
        self.nodes.check_offline(node_id, known=bool(held or edge))
        if held:
            raise HeadwaterError(
                f"node {node_id!r} holds containers {', '.join(held)}: the master has nowhere "
                f"else to run them; restart the node or kill those topologies first"
            )
        for dep in edge:
            dep.agents.remove(node_id)
        self._save()
        self.nodes.forget(node_id)

    # -- uplinks -----------------------------------------------------------------
    def locate(self, topology: str, component: str) -> pb.ReceiverAddress:
        """Where the receiver of ``component`` runs: its container's stream manager.

        The agent dials it there (the master keeps only who is where). Raises
        KeyError when there is no such receiver, LookupError while its container
        has not registered (yet).
        """
        tm = self.tms.get(topology)
        receiver = tm is not None and any(  # receivers stand in for edge components as spouts
            c.name == component and c.kind == "spout" for c in tm.topology.components
        )
        container = tm.container_of(component) if tm is not None and receiver else None
        if tm is None or container is None:
            raise KeyError(f"no receiver of {component!r} in topology {topology!r}")
        info = tm.containers.get(container)
        if info is None or not info.stmgr_address:
            raise LookupError(f"container {container} of {topology!r} is not running (yet)")
        return pb.ReceiverAddress(
            address=info.stmgr_address, container=container, incarnation=info.incarnation
        )

    def fetch(self, digest: str) -> bytes:
        try:
            return self.packages.get(digest)
        except PackageMismatchError as exc:
            log.error("%s", exc)
            raise
