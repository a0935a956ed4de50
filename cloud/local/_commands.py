"""The command lines of a local run's processes: its topology master and its containers.

Each function gives the arguments after ``python`` (``spawn`` adds the interpreter) for
one process of ``LocalCluster`` (``_cluster.py``), from the values it needs and nothing
else: the topology file and name, the container count, the work directory and how the
links are secured (a TLS folder, or ``insecure``).
"""

from __future__ import annotations

from pathlib import Path


def tmaster_args(
    topology_file: str,
    topology: str | None,
    containers: int,
    workdir: Path,
    ready: Path,
    *,
    insecure: bool,
    tls_dir: Path,
    grpc_address: str = "",
    http_address: str = "",
    grpc_ready: Path | None = None,
) -> list[str]:
    """The topology master's; given its addresses, a restart keeps the same ports. It writes
    ``ready`` once it listens, and ``grpc_ready`` (its gRPC address, for its containers)
    before, as soon as its gRPC port listens."""
    # its credentials: tokens and TLS, or ``--insecure`` (neither)
    links = (
        ["--insecure"]
        if insecure
        else ["--tokens", str(workdir / "tokens.json"), "--tls-dir", str(tls_dir)]
    )
    args = [
        "-m",
        "headwater.cloud.tmaster",
        "--topology-file",
        topology_file,
        "--containers",
        str(containers),
        "--ready-file",
        str(ready),
        *(["--grpc-ready-file", str(grpc_ready)] if grpc_ready is not None else []),
        "--state-dir",
        str(workdir / "tmaster-state"),
        *links,
    ]
    if grpc_address:  # a restart keeps the addresses the containers know
        args += [
            "--grpc-port",
            grpc_address.rsplit(":", 1)[1],
            "--http-port",
            http_address.rsplit(":", 1)[1],
        ]
    if topology:
        args += ["--topology", topology]
    return args


def container_args(
    topology_file: str,
    topology: str | None,
    container: int,
    containers: int,
    tmaster: str,
    workdir: Path,
    *,
    insecure: bool,
    tls_dir: Path,
    tmaster_file: Path | None = None,
) -> list[str]:
    """Container ``container``'s, which reaches its topology master at ``tmaster``; or, while
    that is "", at the address the master writes to ``tmaster_file`` once it listens (the
    first start: the containers start while their master does)."""
    args = [
        "-m",
        "headwater.common.runtime.container",
        "--topology-file",
        topology_file,
        "--container",
        str(container),
        "--containers",
        str(containers),
        *(["--tmaster", tmaster] if tmaster or tmaster_file is None else []),
        *(["--tmaster-file", str(tmaster_file)] if not tmaster and tmaster_file else []),
        "--workdir",
        str(workdir),
        "--state-dir",
        str(workdir / "state" / f"container-{container}"),
        "--fork-instances",  # each instance a fork of one that imported it: a faster start
        *(["--insecure"] if insecure else ["--tls-dir", str(tls_dir)]),
    ]
    if topology:
        args += ["--topology", topology]
    return args
