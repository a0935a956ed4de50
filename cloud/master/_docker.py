"""The Docker scheduler: one Docker container per cloud container of each topology.

``headwater master --scheduler docker`` starts each cloud container of a
submitted topology in a Docker container of its own, from the cluster's image.
What runs inside is an ordinary ``headwater worker``: its node id, hostname
and Docker container name are one name (``container_name``), its stream
manager listens on that name on the cluster's Docker network (peers and agents
reach it there), and it enrols with a join token the master mints for it (a
worker token with a short life, revoked once the node has attached), then
speaks mutual TLS like any worker. The master pins container ``c`` of a
topology to that node id instead of dealing it to the least loaded worker, so
the worker side is the one every worker runs.

Each Docker container carries the labels ``io.headwater.cluster`` (the
cluster id, made once and kept in the master's state folder),
``io.headwater.topology``, ``io.headwater.container`` (its index) and
``io.headwater.revision`` (the topology's revision when it was created); CPU
and memory limits from the topology's ``headwater.container.cpu`` and
``headwater.container.ram.bytes``; the restart policy ``unless-stopped``; and
an anonymous volume for the worker's folder (its certificate, packages and
state survive a restart of the container, and go with it when it is removed).

The scheduler is level-triggered: a reconciler (``run``) lists the containers
that carry the cluster's label every few seconds, and at once after a submit
or a kill, and makes them what the deployments say: it removes orphans (a
topology killed or unknown, an index past the topology's containers, a
duplicate of an index, a container whose labels are not ours), starts a
container of ours that stopped (``docker kill``, a crash), and creates what is
missing. After the master's own restart the first pass does the same, so
nothing is left behind and nothing runs twice. Docker is called from a thread
(the SDK blocks); passes never overlap. What the engine is asked (labels,
names, a pass, logs) is ``DockerEngine``'s (``_docker_engine.py``); here is
the scheduler: what the deployments want, the join tokens, the reconciler's
loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from headwater.common._exceptions import HeadwaterError
from headwater.common.api import Topology
from headwater.common.api._config import ContainerResources
from headwater.common.control import TopologyMaster
from headwater.common.security import JoinToken, TokenStore

from ._deployments import Deployment
from ._docker_engine import (
    CLUSTER,
    CONTAINER,
    LABELS,
    MAX_LOG_BYTES,
    MAX_TAIL,
    RESTART_POLICY,
    REVISION,
    TOPOLOGY,
    WORKDIR,
    DockerEngine,
    PassResult,
    Wanted,
    cluster_id,
    container_name,
    listed,
    tail_lines,
)
from ._nodes import Nodes
from ._scheduler import SchedulerPort

__all__ = [
    "CLUSTER",
    "CONTAINER",
    "LABELS",
    "MAX_LOG_BYTES",
    "MAX_TAIL",
    "RECONCILE_S",
    "RESTART_POLICY",
    "REVISION",
    "TOKEN_TTL_S",
    "TOPOLOGY",
    "WORKDIR",
    "DockerHost",
    "DockerOptions",
    "DockerScheduler",
    "PassResult",
    "Wanted",
    "cluster_id",
    "container_name",
    "listed",
    "open_scheduler",
    "tail_lines",
]

log = logging.getLogger("headwater.master")

RECONCILE_S = 5.0
TOKEN_TTL_S = 900.0


class DockerHost(Protocol):
    """What the Docker scheduler asks of the master (``Master`` is one): its scheduler port
    (``orders``), its topology masters (each topology's limits and revision), its node
    registry and tokens (a join token per container's worker), and ``forget``."""

    @property
    def state_dir(self) -> Path: ...

    @property
    def orders(self) -> SchedulerPort: ...

    @property
    def tms(self) -> Mapping[str, TopologyMaster]: ...

    @property
    def nodes(self) -> Nodes: ...

    @property
    def tokens(self) -> TokenStore: ...

    @property
    def join_port(self) -> int: ...

    @property
    def ca_fingerprint(self) -> str: ...

    def forget(self, node_id: str) -> None: ...


class DockerScheduler:
    """Run each cloud container in a Docker container of its own (see the module's doc).

    ``client`` is a ``docker.DockerClient`` (or anything with the parts used here: a
    test's fake). ``advertise`` is the master's gRPC address as the containers reach it;
    the join port and CA fingerprint come from the master once it serves."""

    name = "docker"

    def __init__(
        self,
        master: DockerHost,
        client: Any,
        *,
        image: str,
        network: str,
        advertise: str,
        cluster: str,
        period_s: float = RECONCILE_S,
        host_cpus: float | None = None,
        host_memory: int | None = None,
    ) -> None:
        self.master = master
        self.client = client
        self.image = image
        self.network = network
        self.advertise = advertise
        self.cluster = cluster
        self.period_s = period_s
        self.host_cpus = host_cpus
        self.host_memory = host_memory
        self._removing: set[str] = set()  # killed topologies whose containers go
        self._tokens: dict[str, str] = {}  # node id -> the id of the join token minted for it
        self._kick = asyncio.Event()
        self.engine = DockerEngine(
            client, cluster=cluster, image=image, network=network, advertise=advertise
        )

    # -- what the master calls (on its loop) --------------------------------------------
    def node_id(self, topology: str, index: int) -> str:
        return container_name(self.cluster, topology, index)

    def check(self, topology: Topology) -> None:
        """Refuse limits this Docker Engine cannot give (it would refuse every container)."""
        res = ContainerResources.from_mapping(topology.config)
        if self.host_cpus is not None and res.cpu > self.host_cpus:
            raise HeadwaterError(
                f"topology {topology.name!r} asks {res.cpu:g} CPUs per container "
                f"(headwater.container.cpu), but the Docker host has {self.host_cpus:g}: lower it"
            )
        if self.host_memory is not None and res.ram_bytes > self.host_memory:
            raise HeadwaterError(
                f"topology {topology.name!r} asks {res.ram_bytes} bytes of memory per container "
                f"(headwater.container.ram.bytes), but the Docker host has {self.host_memory}: "
                "lower it"
            )

    def place(self, dep: Deployment) -> None:
        """Pin each container of ``dep`` to its Docker node; the reconciler starts them."""
        for c in range(dep.containers):
            node = self.node_id(dep.name, c)
            old = dep.assignment.get(c)
            if old == node:
                continue
            if old is not None:  # it ran on a worker before (the master ran another scheduler)
                self.master.orders.stop(old, dep.name, c)
            dep.assignment[c] = node
            self.master.orders.run(dep, c)
        self._kick.set()

    def removed(self, name: str) -> None:
        self._removing.add(name)
        self._kick.set()

    # -- the reconciler ----------------------------------------------------------------
    def wanted(self) -> dict[tuple[str, int], Wanted]:
        """Every container the deployments call for, by (topology, index)."""
        out: dict[tuple[str, int], Wanted] = {}
        for dep in self.master.orders.deployments.values():
            tm = self.master.tms.get(dep.name)
            if tm is None:
                continue
            try:
                res = ContainerResources.from_mapping(tm.topology.config)
            except ValueError:  # checked at submit; a file changed since is refused here
                res = ContainerResources()
            for c in range(dep.containers):
                out[(dep.name, c)] = Wanted(self.node_id(dep.name, c), dep.name, c, tm.current, res)
        return out

    async def run(self) -> None:
        """Reconcile every ``period_s`` and at once when kicked, until cancelled.

        First every deployment is pinned to its Docker nodes (a master that ran another
        scheduler before its restart dealt them to workers)."""
        for dep in list(self.master.orders.deployments.values()):
            self.place(dep)
        self.master.orders.save()
        while True:
            self._kick.clear()
            await self.reconcile()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.period_s):
                    await self._kick.wait()

    async def reconcile(self) -> PassResult | None:
        """One pass: Docker is made what the deployments say. None if Docker failed."""
        wanted, removing = self.wanted(), set(self._removing)
        try:
            result = await asyncio.to_thread(
                self.engine.reconcile_pass, wanted, removing, self._mint
            )
        except Exception as exc:  # the engine away, or refusing: said, and tried again
            log.warning("the Docker scheduler cannot reconcile (will try again): %s", exc)
            return None
        self._removing -= removing
        self._tidy(wanted)
        return result

    def _mint(self, node_id: str) -> str | None:
        """A join token for one container's worker (None: the master runs --insecure)."""
        if self.master.nodes.enrolment is None or not self.master.join_port:
            return None
        raw = self.master.tokens.create(
            "worker", TOKEN_TTL_S, f"Docker scheduler: enrols node {node_id}"
        )
        self._tokens[node_id] = raw.partition(".")[0]
        return str(JoinToken(self.master.join_port, raw, self.master.ca_fingerprint))

    def _tidy(self, wanted: dict[tuple[str, int], Wanted]) -> None:
        """Revoke the join tokens of nodes that attached; forget the nodes of removed ones."""
        for node_id, token_id in list(self._tokens.items()):
            if self.master.nodes.online(node_id):
                self.master.tokens.revoke(token_id)
                del self._tokens[node_id]
        names = {w.name for w in wanted.values()}
        prefix = f"hw-{self.cluster[:8]}-"
        for node_id in list(self.master.nodes.records):
            if node_id.startswith(prefix) and node_id not in names:
                try:
                    self.master.forget(node_id)
                except (KeyError, HeadwaterError):
                    continue  # still online (its container is going), or held: later

    # -- logs --------------------------------------------------------------------------
    async def logs(self, dep: Deployment, container: int, tail: int) -> dict[str, Any]:
        """The worker's Docker log and the container's own log file (its last ``tail``
        lines each), read through the Docker API."""
        name = self.node_id(dep.name, container)
        return await asyncio.to_thread(self.engine.logs, dep.name, container, name, tail)


@dataclass(frozen=True)
class DockerOptions:
    """``headwater master --scheduler docker``'s options."""

    image: str = "headwater:latest"
    network: str = "headwater"
    advertise: str = ""
    """The master's gRPC address as containers reach it (HOST:PORT); default: --host:--port."""


_LOCAL_HOSTS = ("", "0.0.0.0", "::", "[::]", "localhost")


def open_scheduler(
    master: DockerHost, options: DockerOptions, grpc_address: str, client: Any = None
) -> DockerScheduler:
    """The Docker scheduler of ``master``, after checking that the engine answers, the image
    is there and the network is one (made, labelled with the cluster, if missing).

    Raises HeadwaterError saying what to fix. Blocks (call it before serving)."""
    advertise = options.advertise or grpc_address
    host, _, port = advertise.rpartition(":")
    if not port.isdigit() or host in _LOCAL_HOSTS or host.startswith("127."):
        raise HeadwaterError(
            f"the Docker scheduler's containers cannot reach the master at {advertise!r}: "
            "listen on an address of the Docker network (--host GATEWAY_IP, e.g. the "
            "network's gateway) or give --advertise HOST:PORT"
        )
    if client is None:
        import docker

        try:
            client = docker.from_env()
            client.ping()
        except Exception as exc:
            raise HeadwaterError(
                f"--scheduler docker: cannot reach the Docker Engine ({exc}); is it running, "
                "and may this user use its socket (DOCKER_HOST)?"
            ) from None
    try:
        client.images.get(options.image)
    except Exception as exc:
        raise HeadwaterError(
            f"--docker-image {options.image!r} is not on this Docker Engine ({exc}); build it "
            "(deploy/compose/build makes headwater:latest) or name another"
        ) from None
    cluster = cluster_id(master.state_dir)
    try:
        client.networks.get(options.network)
    except Exception as exc:
        if getattr(getattr(exc, "response", None), "status_code", None) != 404:
            raise HeadwaterError(f"--docker-network {options.network!r}: {exc}") from None
        client.networks.create(options.network, driver="bridge", labels={CLUSTER: cluster})
        log.info("made the Docker network %s", options.network)
    info = client.info()
    return DockerScheduler(
        master,
        client,
        image=options.image,
        network=options.network,
        advertise=advertise,
        cluster=cluster,
        host_cpus=float(info.get("NCPU") or 0) or None,
        host_memory=int(info.get("MemTotal") or 0) or None,
    )
