"""The Docker scheduler on the command line: ``headwater master --scheduler docker`` and
``headwater logs``.

``headwater logs TOPOLOGY[/CONTAINER] [--tail N]`` prints the last lines of
the logs of a topology's containers (all of them, or one). Under the Docker
scheduler the master reads them through the Docker API: the worker's Docker
log, then the container's own log file. Under the worker scheduler it asks
the worker that runs the container: the container's own log file, then each
of its instances' log files (``task-T.log``). ``headwater logs NODE`` does
the same for a Docker-scheduled node id (a worker the master did not start
keeps its own log where it was started). It needs an operator's token: a
log holds what user code prints, which a viewer's dashboards do not show.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from headwater._argtypes import whole
from headwater._master_client import Client, add_client_options
from headwater.common._exceptions import HeadwaterError

if TYPE_CHECKING:
    from headwater.cloud.master._docker import DockerOptions

MAX_TAIL = 10_000


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


def add_parsers(sub: Any, master_help: str) -> None:
    logs = sub.add_parser(
        "logs",
        help="print the last lines of a topology's containers' logs (and their instances') "
        "or a Docker-scheduled node's",
    )
    logs.add_argument(
        "target",
        metavar="TOPOLOGY[/CONTAINER]|NODE",
        help="a topology (all its containers), one of its containers, or a node id",
    )
    logs.add_argument(
        "--tail",
        type=whole(1, MAX_TAIL),
        default=200,
        metavar="N",
        help=f"the last N lines of each log (1 to {MAX_TAIL}; default 200)",
    )
    add_client_options(logs, master_help)
    logs.set_defaults(func=_cmd_logs)


def _cmd_logs(args: argparse.Namespace) -> int:
    target, tail = args.target, args.tail
    name, slash, number = target.partition("/")
    if slash and (not name or not number.isdigit() or not number.isascii()):
        raise HeadwaterError(f"{target!r}: name a topology and a container number, as in wc/0")
    client = Client.from_args(args)
    if slash:
        path = f"/api/v1/topologies/{quote(name, safe='')}/containers/{number}/logs"
        views = [client.call("GET", f"{path}?tail={tail}")]
    else:
        topologies = {t.get("name") for t in client.call("GET", "/api/v1/topologies")}
        nodes = {n.get("id") for n in client.call("GET", "/api/v1/nodes")}
        if target in topologies:
            views = client.call(
                "GET", f"/api/v1/topologies/{quote(target, safe='')}/logs?tail={tail}"
            )
        elif target in nodes:
            views = [client.call("GET", f"/api/v1/nodes/{quote(target, safe='')}/logs?tail={tail}")]
        else:
            known = ", ".join(sorted(str(t) for t in topologies)) or "none"
            raise HeadwaterError(f"no topology or node named {target!r} (topologies: {known})")
    for view in views:
        _print(view)
    return 0


def _print(view: dict[str, Any]) -> None:
    out = sys.stdout
    where = f"{view['topology']}/{view['container']}"
    if "worker_log" in view:  # the Docker scheduler's
        out.write(
            f"==> {where}: worker log (Docker container {view['docker_container']}, "
            f"{view['status']}) <==\n"
        )
        out.write(_ended(view["worker_log"]))
    node = f" on node {view['node']}" if "docker_container" not in view else ""
    out.write(f"==> {where}: container log{node} ({view['container_log_path']}) <==\n")
    out.write(_ended(view["container_log"]))
    for instance in view.get("instance_logs", []):
        out.write(f"==> {where}: instance log {instance['name']} ({instance['path']}) <==\n")
        out.write(_ended(instance["text"]))
    out.flush()


def _ended(text: str) -> str:
    return text if not text or text.endswith("\n") else text + "\n"
