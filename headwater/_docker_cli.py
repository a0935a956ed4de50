"""The Docker scheduler on the command line: ``headwater master --scheduler docker``'s
options (``headwater logs``, which reads its containers' logs, is ``_logs_cli``'s)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from headwater.cloud.master._docker import DockerOptions


def add_docker_options(master: argparse.ArgumentParser) -> None:
    """``headwater master``'s ``--scheduler`` and the Docker scheduler's options."""
    master.add_argument(
        "--scheduler",
        choices=("worker", "docker"),
        default="worker",
        help="where cloud containers run: worker (default: on attached `headwater worker` "
        "nodes) or docker (one Docker container each, from --docker-image)",
    )
    master.add_argument(
        "--docker-image",
        default="headwater:latest",
        metavar="IMAGE",
        help="the cluster's image the Docker scheduler runs (default headwater:latest, "
        "which deploy/compose/build makes)",
    )
    master.add_argument(
        "--docker-network",
        default="headwater",
        metavar="NET",
        help="the Docker network of the containers (default headwater, made if missing)",
    )
    master.add_argument(
        "--advertise",
        dest="docker_advertise",  # not `advertise`: that is --no-advertise's (zeroconf)
        default=None,
        metavar="HOST:PORT",
        help="the master's gRPC address as the Docker containers reach it (default: "
        "--host:--port, which must then be an address on their network)",
    )


def docker_options(args: argparse.Namespace) -> DockerOptions | None:
    """The Docker scheduler's options, or None for the worker scheduler."""
    if args.scheduler != "docker":
        for flag in ("docker_image", "docker_network"):
            default = {"docker_image": "headwater:latest", "docker_network": "headwater"}[flag]
            if getattr(args, flag) != default:
                raise HeadwaterError(
                    f"--{flag.replace('_', '-')} is for --scheduler docker; add that option"
                )
        if args.docker_advertise:
            raise HeadwaterError("--advertise is for --scheduler docker; add that option")
        return None
    from headwater.cloud.master._docker import DockerOptions

    if args.docker_advertise:
        host, _, port = args.docker_advertise.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise HeadwaterError(f"--advertise {args.docker_advertise!r} is not HOST:PORT")
    return DockerOptions(args.docker_image, args.docker_network, args.docker_advertise or "")
