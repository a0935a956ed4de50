"""What a container process is told when it starts: ``ContainerConfig``, from its command line.

A worker (or an agent, or ``headwater run``) starts a container as
``python -m headwater.common.runtime.container --topology-file F --container N ...``;
``parse_config`` turns that command line into the frozen ``ContainerConfig``
that ``Container`` takes; ``checkpoint_store`` opens the checkpoint store it names.
"""

from __future__ import annotations

import argparse
import os
from dataclasses import dataclass, field
from pathlib import Path

from .._exceptions import HeadwaterError
from .._sandbox import RunAs
from ..plan import add_domain_arguments
from ..security import AGENT_NAME, MASTER_NAME, Transport
from ..state._checkpoints import Checkpoints, LocalCheckpoints
from ..state._store_args import SharedStore, add_store_arguments, shared_store

FOOTPRINT_ENV = "HEADWATER_FOOTPRINT"
"""How a container runs its instances when ``--footprint`` is not given (an agent sets it)."""


@dataclass(frozen=True)
class ContainerConfig:
    topology_file: str  # the file that defines the topology (its first revision)
    container: int  # this container's index in the physical plan
    containers: int  # how many containers the topology is packed into
    tmaster: str  # host:port of the topology master ("" until ``tmaster_file`` says it)
    workdir: Path  # the socket, the instances' logs, the unpacked revisions
    state_dir: str  # where this container's checkpoints live
    topology: str | None = None  # the topology's name, if the file defines several
    host: str = "127.0.0.1"  # the address the stream manager serves its peers on
    domain: str | None = None  # the checkpoint domain it runs (None: the whole topology)
    labels: dict[str, str] = field(default_factory=dict)  # the agent's labels (edge)
    tls_dir: Path | None = None  # its node's credentials (None: plaintext, --insecure)
    footprint: str = "normal"  # "small": its instances on threads of this process (_threads)
    run_as: RunAs | None = None  # the topology's own user (a node's, common/_sandbox.py)
    # ``headwater run`` starts its containers beside its topology master, not after it: the
    # file the master writes its addresses to once it listens (``{"grpc": "host:port"}``)
    tmaster_file: Path | None = None
    fork_instances: bool = False  # each instance a fork of a process that imported it once
    shared_store: SharedStore | None = None  # None: checkpoints in state_dir alone

    @property
    def transport(self) -> Transport:
        return Transport(self.tls_dir) if self.tls_dir is not None else Transport.insecure()

    @property
    def tmaster_name(self) -> str:
        """The name its topology master's certificate carries: an edge container's is its
        agent's; a cloud one's the master's (``headwater run``'s carries both)."""
        return AGENT_NAME if self.domain == "edge" else MASTER_NAME


def parse_config(argv: list[str] | None = None) -> ContainerConfig:
    """The container's command line (``sys.argv[1:]`` when ``argv`` is None)."""
    p = argparse.ArgumentParser(prog="headwater-container")
    p.add_argument("--topology-file", required=True)
    p.add_argument("--topology", default=None)
    p.add_argument("--container", type=int, required=True)
    p.add_argument("--containers", type=int, required=True)
    master = p.add_mutually_exclusive_group(required=True)
    master.add_argument("--tmaster", help="host:port of the topology master")
    master.add_argument(
        "--tmaster-file",
        help="the file the topology master writes its addresses to once it listens (JSON, "
        "its gRPC host:port under 'grpc'): this container registers once it is there",
    )
    p.add_argument("--workdir", required=True)
    p.add_argument("--state-dir", required=True, help="where this container's checkpoints live")
    p.add_argument("--host", default="127.0.0.1")
    add_domain_arguments(p)
    footprints = ("normal", "small")
    p.add_argument(
        "--footprint",
        choices=footprints,
        default=os.environ.get(FOOTPRINT_ENV) or "normal",
        help="normal: an OS process per instance; small: every instance on threads of this "
        f"process (default: ${FOOTPRINT_ENV}, else normal)",
    )
    p.add_argument(
        "--run-as",
        type=RunAs.parse,
        default=None,
        metavar="UID:GID:HOME",
        help="run the topology's code as this user (needs root): its instances, and the "
        "child that loads its file (this process never runs the topology's code then)",
    )
    p.add_argument(
        "--fork-instances",
        action="store_true",
        help="start each instance process as a fork of a server process that imported the "
        "instance's code once, instead of a new interpreter (a faster start; not with "
        "--run-as or --footprint small)",
    )
    add_store_arguments(p)
    links = p.add_mutually_exclusive_group(required=True)
    links.add_argument("--tls-dir", help="its node's credentials: every link is mutual TLS")
    links.add_argument("--insecure", action="store_true", help="plaintext links (development)")
    a = p.parse_args(argv)
    if a.footprint not in footprints:  # argparse checks what is given, not its default
        p.error(f"${FOOTPRINT_ENV} is one of {', '.join(footprints)}, not {a.footprint!r}")
    if a.run_as is not None and a.footprint == "small":
        p.error("--run-as needs --footprint normal: small runs the instances in this process")
    try:
        store = shared_store(a)
    except HeadwaterError as exc:
        p.error(str(exc))
    return ContainerConfig(
        topology_file=a.topology_file,
        container=a.container,
        containers=a.containers,
        tmaster=a.tmaster or "",
        workdir=Path(a.workdir),
        state_dir=a.state_dir,
        topology=a.topology,
        host=a.host,
        domain=a.domain,
        labels=a.labels,
        tls_dir=Path(a.tls_dir) if a.tls_dir else None,
        footprint=a.footprint,
        run_as=a.run_as,
        tmaster_file=Path(a.tmaster_file) if a.tmaster_file else None,
        fork_instances=a.fork_instances,
        shared_store=store,
    )


def checkpoint_store(config: ContainerConfig, topology: str) -> Checkpoints:
    """The container's checkpoint store: in its state dir, shared if its worker says so."""
    shared = config.shared_store
    if shared is None:
        return LocalCheckpoints(config.state_dir)
    from ..state._s3 import ObjectStore
    from ..state._shared_store import S3Checkpoints
    from ..state._store_args import cluster_of, namespace

    objects = ObjectStore(shared.settings, shared.credentials)
    where = namespace(
        shared.settings.prefix, cluster_of(config.tls_dir), topology, config.container
    )
    return S3Checkpoints(config.state_dir, objects, where)
