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

The master composes one part per message family, each taking the narrow port
it needs, never the master: ``Deployments`` (``_deployments.py``: the record,
the topology masters, kill, state, receivers' whereabouts), ``Submissions``
(``_submissions.py``), ``Edits`` (``_edits.py``), ``NodeOrders``
(``_node_orders.py``: what the deployments give each node, and the schedulers'
port), the model registry and rollouts (``_models.py``, ``_rollout.py``), and the
topologies' health managers (``HealthLoop``, ``_health_loop.py``).
Its public methods are those parts' methods, named where its callers know them.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from headwater.common._package import PackageStore
from headwater.common.api import Topology
from headwater.common.plan._child_loader import LoadLimits
from headwater.common.security import TokenStore
from headwater.common.security._files import write_private
from headwater.common.statemgr import LocalStateManager, Record, StateManager, under
from headwater.common.wire.proto import runtime_pb2 as pb

from ._code import TopologyCode
from ._deployments import MAX_CONTAINERS, Deployment, Deployments, topology_name_problem
from ._edits import Edits
from ._health_loop import HealthLoop
from ._health_sample import AgentReport
from ._models import ModelRegistry
from ._move_states import MoveStates
from ._node_logs import NodeLogs
from ._node_orders import NodeOrders
from ._nodes import Nodes
from ._rollout import Rollouts
from ._scheduler import PLACEMENT_DELAY_S, Scheduler, WorkerScheduler
from ._spark_jobs import SparkJobs
from ._submissions import Submissions
from ._traffic import TrafficCounter

if TYPE_CHECKING:
    from ._blob_store import MasterBlobs

__all__ = ["MAX_CONTAINERS", "Deployment", "Master", "topology_name_problem"]

log = logging.getLogger("headwater.master")


class Master:
    """The cloud master: its parts wired together, and the requests its callers make."""

    def __init__(
        self,
        state_dir: str | Path,
        grpc_address: str = "",
        *,
        state: StateManager | None = None,
        load_limits: LoadLimits | None = None,
        placement_delay: float = PLACEMENT_DELAY_S,
        blobs: MasterBlobs | None = None,
    ) -> None:
        """``state_dir``: the master's own folder (packages, unpacked code, model artifacts,
        ``admin.token``); ``state``: where its records are kept (``--state``: local files in
        ``state_dir`` by default, or ZooKeeper); ``blobs``: the blob store the masters share
        (``--blob-store``: packages and model artifacts there too, ``state_dir`` a cache of
        them; None: on this disk alone). ``load_limits``: what loading one submitted
        file (in a child process) may take (``LoadLimits()``: 30 s and 1 GiB).
        ``placement_delay``: how long containers that wait for a worker wait after a new
        worker attaches, for others starting with it (``WorkerScheduler``)."""
        self.state_dir = Path(state_dir)
        self.state_dir.mkdir(parents=True, exist_ok=True)
        self.state = state if state is not None else LocalStateManager(self.state_dir)
        self.code = TopologyCode(
            self.state_dir,
            load_limits or LoadLimits(),
            lambda digest: any(d.package == digest for d in self.deployments.values()),
            blobs.packages if blobs is not None else None,
        )
        self.packages = self.code.packages
        self.grpc_address = grpc_address
        # The parts are wired with lambdas where what they call is made later (the orders
        # need the registry) or replaced later (serve() may set another scheduler).
        # the nodes, their sessions and reports; what the deployments give them is the orders'
        self.nodes = Nodes(
            self._attached,
            lambda *given: self.orders.gives(*given),  # noqa: PLW0108
        )
        self.book = Deployments(
            self.state,
            self.code,
            self.nodes.send,
            lambda name: self.scheduler.removed(name),  # noqa: PLW0108
        )
        self.deployments = self.book.deployments
        self.tms = self.book.tms
        self._coordinators = self.book.coordinators
        self.traffic = TrafficCounter()  # serve() puts the one on its gRPC server here
        # the REST API's tokens and the join tokens; the first start makes an admin token
        self.tokens = TokenStore(Record(self.state, "tokens.json"))
        self.join_port: int = 0  # the enrolment port (0: insecure, nodes need no token)
        self.ca_fingerprint: str = ""
        # the REST API's URL as a worker's Spark job reaches it (registering models); serve()
        # sets it once the API listens
        self.http_url: str = ""
        if not self.tokens.exists():  # the admin token is the operator's, on this host
            admin = self.tokens.create("admin", description="made at the master's first start")
            write_private(self.state_dir / "admin.token", f"{admin}\n".encode())
            log.info("an admin token for the REST API is in %s", self.state_dir / "admin.token")
        # the artifacts on this master's disk (and in the shared blob store), their metadata
        # in the state
        self.models = ModelRegistry(
            self.state_dir / "models",
            under(self.state, "models"),
            blobs.models if blobs is not None else None,
        )
        self.rollouts = Rollouts(self, self.models, Record(self.state, "rollouts.json"))
        self.node_logs = NodeLogs(self)  # container logs asked of the nodes that run them
        self.spark_jobs = SparkJobs(  # _spark_jobs.py
            self, load_limits or LoadLimits(), blobs.spark_packages if blobs is not None else None
        )
        self.orders = NodeOrders(
            self.deployments,
            self.nodes,
            place=lambda dep: self.scheduler.place(dep),  # noqa: PLW0108
            save=self.book.save,
            spark_packages=self.spark_jobs.packages_of,
        )
        # where cloud containers run: attached workers, unless serve() sets another
        self.scheduler: Scheduler = WorkerScheduler(
            self.orders, placement_delay, logs=self.node_logs.fetch
        )
        self.submissions = Submissions(
            self.code,
            self.book,
            check=lambda topology: self.scheduler.check(topology),  # noqa: PLW0108
            spark_named=self.spark_jobs.named,
            schedule=self.orders.schedule,
        )
        self.edits = Edits(self.code, self.book, self.nodes.send)
        # a keyed move's state to the edge, gathered by a topology master: to its agent
        self.move_states = MoveStates(self.deployments, self.tms, self.nodes)
        self.book.site_state_ready = self.move_states.ready
        # each topology's health manager, fed by serve()'s loop (``_health_loop.py``)
        self.health = HealthLoop(
            self.tms,
            self.code.described,
            self.edit,
            under(self.state, "health"),
            agents=self.edge_reports,
        )

    def _attached(self, node_id: str) -> None:
        """A node (re)attached: what the deployments give it, and a move's state it is owed."""
        self.orders.attached(node_id)
        self.move_states.attached(node_id)

    # -- the parts' requests, as the master's callers name them --------------------------
    async def resume(self) -> None:
        """``Submissions.resume``: start every deployment the record keeps."""
        await self.submissions.resume()

    async def submit(self, data: bytes, entry: str, containers: int) -> dict[str, Any]:
        """``Submissions.submit``."""
        return await self.submissions.submit(data, entry, containers)

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
        reason: str = "",
        files: dict[str, str | None] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        """``Edits.edit``."""
        return await self.edits.edit(
            name,
            action,
            base,
            data,
            entry,
            components,
            author,
            to,
            parallelism,
            reason,
            files,
            dry_run,
        )

    def described(self, package: str, entry: str) -> Topology | None:
        """The whole topology (package, entry) defines, as a skeleton, if it is kept: the
        files of running topologies' revisions are."""
        return self.code.described(package, entry)

    def agent_revisions(self, name: str) -> dict[str, int]:
        return self.orders.agent_revisions(name)

    def edge_reports(self, name: str) -> dict[str, AgentReport]:
        """What the online agents running ``name``'s edge subgraph last reported (for its
        health manager): their status's metrics, and whether its uplink is connected."""
        dep = self.deployments.get(name)
        out: dict[str, AgentReport] = {}
        for agent in dep.agents if dep is not None else []:
            node = self.nodes.records.get(agent)
            if node is None or node.status is None or not self.nodes.online(agent):
                continue
            status = node.status
            up = any(u.topology == name and u.connected for u in status.uplinks)
            out[agent] = AgentReport(dict(status.metrics), up, node.last_seen)
        return out

    def kill(self, name: str) -> None:
        self.book.kill(name)

    def set_state(self, name: str, state: str) -> None:
        self.book.set_state(name, state)

    def packages_of(self, node_id: str) -> set[str]:
        return self.orders.packages_of(node_id)

    def forget(self, node_id: str) -> None:
        self.orders.forget(node_id)

    def locate(self, topology: str, component: str) -> pb.ReceiverAddress:
        return self.book.locate(topology, component)

    def package_store(self, digest: str) -> PackageStore:
        """Where a package a node asks for is kept: a Spark job's or the topologies' store
        (``get`` fetches one missing here from the shared blob store: on a thread)."""
        jobs = self.spark_jobs
        return jobs.packages if jobs.runs_package(digest) else self.packages
