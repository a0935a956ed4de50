"""`headwater master|worker|agent`: the daemons, their options and how they start (the
agent's in `_agent_cli.py`, what the three share in `_daemon_run.py`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from headwater._agent_cli import add_agent_parser
from headwater._argtypes import number
from headwater._daemon_run import (
    add_identity_arguments,
    daemon_logging,
    default_dir,
    node_id_arg,
    run_daemon,
    warn_insecure,
)
from headwater._limits_cli import add_limit_arguments, limits_of
from headwater.common._exceptions import HeadwaterError

__all__ = ["add_parsers", "warn_insecure"]


def add_parsers(sub: Any) -> None:
    master = sub.add_parser(
        "master", help="run the master daemon (topology masters, scheduler, package store, API)"
    )
    master.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on for nodes (default 127.0.0.1: this machine only)",
    )
    master.add_argument("--port", type=int, default=7070, help="gRPC port for nodes (default 7070)")
    _add_rest_options(master)
    master.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where topologies, packages, tokens and checkpoints persist (default: master/ in "
        "$HEADWATER_STATE_DIR, else ~/.local/state/headwater)",
    )
    master.add_argument(
        "--no-advertise",
        dest="advertise",
        action="store_false",
        help="do not announce the master by zeroconf on --host's network",
    )
    master.add_argument(
        "--join-port",
        type=int,
        default=7072,
        help="where nodes enrol with a join token (TLS, no client certificate; default 7072)",
    )
    master.add_argument(
        "--placement-delay",
        type=number(0, what="a number of seconds"),
        default=3.0,
        metavar="S",
        help="containers waiting for a worker are dealt once no new worker has attached for S "
        "seconds, so workers starting together share them (default 3; 0: at once)",
    )
    master.add_argument(
        "--health-interval",
        type=number(0.1, what="a number of seconds"),
        default=5.0,
        metavar="S",
        help="how often each topology's health manager reads its metrics (default 5)",
    )
    master.add_argument("--ready-file", default=None, help=argparse.SUPPRESS)
    from headwater._docker_cli import add_docker_options

    add_docker_options(master)
    master.set_defaults(func=_cmd_master)

    worker = sub.add_parser("worker", help="run a cloud worker that hosts containers")
    worker.add_argument(
        "--master",
        required=True,
        metavar="HOST:PORT",
        help="the master's gRPC address (headwater master --port)",
    )
    worker.add_argument(
        "--id",
        type=node_id_arg,
        default=None,
        help="node id (default: generated once, kept in WORKDIR/node-id)",
    )
    worker.add_argument(
        "--workdir",
        default=None,
        metavar="DIR",
        help="its id, certificate, packages and containers' state and logs (default: worker/ "
        "in $HEADWATER_STATE_DIR, else ~/.local/state/headwater); a second worker on one "
        "machine needs its own",
    )
    worker.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address its containers' stream managers listen on and give to peers and "
        "agents (their uplinks come in there); default 127.0.0.1: this machine only",
    )
    for flag, what in (("--landing", "landing"), ("--warehouse", "warehouse")):
        worker.add_argument(
            flag,
            default=None,
            metavar="DIR",
            help=f"the {what} folder of the Spark jobs it runs whose submission names none "
            f"(default: WORKDIR/{what})",
        )
    add_identity_arguments(worker, "worker")
    add_limit_arguments(worker)
    worker.set_defaults(func=_cmd_worker)
    add_agent_parser(sub)


def _add_rest_options(master: argparse.ArgumentParser) -> None:
    """The master's REST API: where it listens, its TLS, and --insecure."""
    master.add_argument("--http-port", type=int, default=7071, help="REST API port (default 7071)")
    master.add_argument(
        "--http-host",
        default="127.0.0.1",
        metavar="HOST",
        help="address the REST API listens on (default 127.0.0.1: this machine only)",
    )
    master.add_argument(
        "--http-cert",
        default=None,
        metavar="FILE",
        help="serve the REST API over TLS: its certificate",
    )
    master.add_argument("--http-key", default=None, metavar="FILE", help="and its private key")
    master.add_argument(
        "--insecure",
        action="store_true",
        help="no tokens on the REST API and plaintext gRPC: anyone who reaches the master "
        "can run code on every node (a test bench on one machine only)",
    )


def _cmd_master(args: argparse.Namespace) -> int:
    from headwater._docker_cli import docker_options
    from headwater.cloud.master._main import INSECURE_WARNING, serve

    tls = _rest_tls(args)
    docker = docker_options(args)
    daemon_logging("master")
    if args.insecure:
        print(f"headwater master: WARNING: {INSECURE_WARNING}", file=sys.stderr, flush=True)
    state = Path(args.state_dir) if args.state_dir else default_dir("master")
    ready = Path(args.ready_file) if args.ready_file else None
    return run_daemon(
        "master",
        serve(
            args.host,
            args.port,
            args.http_port,
            state,
            ready,
            args.advertise,
            join_port=args.join_port,
            http_host=args.http_host,
            http_cert=tls[0] if tls else None,
            http_key=tls[1] if tls else None,
            insecure=args.insecure,
            docker=docker,
            placement_delay=args.placement_delay,
            health_interval=args.health_interval,
        ),
    )


def _rest_tls(args: argparse.Namespace) -> tuple[Path, Path] | None:
    """``--http-cert`` and ``--http-key``, both readable and a pair, or neither."""
    if args.http_cert is None and args.http_key is None:
        return None
    if args.http_cert is None or args.http_key is None:
        raise HeadwaterError(
            "--http-cert and --http-key go together: give both (TLS) or neither (plain HTTP)"
        )
    import ssl

    for flag, path in (("--http-cert", args.http_cert), ("--http-key", args.http_key)):
        if not os.access(path, os.R_OK):
            raise HeadwaterError(f"{flag} {path!r}: no readable file there")
    try:
        ssl.create_default_context(ssl.Purpose.CLIENT_AUTH).load_cert_chain(
            args.http_cert, args.http_key
        )
    except ssl.SSLError as exc:
        raise HeadwaterError(
            f"--http-cert {args.http_cert!r} and --http-key {args.http_key!r} are not a PEM "
            f"certificate and its private key ({exc.reason or exc})"
        ) from None
    return Path(args.http_cert), Path(args.http_key)


def _cmd_worker(args: argparse.Namespace) -> int:

    from headwater import __version__
    from headwater.cloud.worker import serve

    daemon_logging("worker")
    # the same workdir is the same node (its id is kept there): a second worker on this
    # machine needs a --workdir of its own
    workdir = Path(args.workdir) if args.workdir else default_dir("worker")
    if args.insecure:
        warn_insecure("worker")
    return run_daemon(
        "worker",
        serve(
            args.master,
            workdir,
            args.id,
            __version__,
            args.host,
            args.insecure,
            args.join,
            limits_of(args),
            args.isolation,
            (
                Path(args.landing or workdir / "landing").absolute(),
                Path(args.warehouse or workdir / "warehouse").absolute(),
            ),
        ),
    )
