"""`headwater master|worker|agent`: the daemons, their options and how they start."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

from headwater._argtypes import POSITIVE_INT, number
from headwater._limits_cli import add_limit_arguments, limits_of
from headwater.common._exceptions import HeadwaterError


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
        type=_node_id,
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
    _add_identity_arguments(worker, "worker")
    add_limit_arguments(worker)
    worker.set_defaults(func=_cmd_worker)

    agent = sub.add_parser("agent", help="run the edge agent daemon on a gateway")
    agent.add_argument(
        "--master",
        default=None,
        metavar="HOST:PORT",
        help="the master's gRPC address (default: find it by zeroconf)",
    )
    agent.add_argument(
        "--id",
        type=_node_id,
        default=None,
        help="node id (default: generated once, kept in WORKDIR/node-id)",
    )
    agent.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        type=_label,
        help="a label for edge placement (repeatable)",
    )
    agent.add_argument(
        "--mqtt",
        default=None,
        metavar="HOST:PORT",
        help="the MQTT broker to ingest from (default: no ingestion)",
    )
    agent.add_argument(
        "--topic",
        action="append",
        default=None,
        metavar="FILTER",
        help="MQTT topic filter (repeatable; default sensors/#)",
    )
    agent.add_argument(
        "--mqtt-username", default=None, metavar="USER", help="the broker account to log in as"
    )
    agent.add_argument(
        "--mqtt-password-file",
        default=None,
        metavar="FILE",
        help="a file holding that account's password (or set HEADWATER_MQTT_PASSWORD)",
    )
    agent.add_argument(
        "--mqtt-tls",
        action="store_true",
        help="connect with TLS, trusting the system's CAs (implied by --mqtt-ca/--mqtt-cert)",
    )
    agent.add_argument(
        "--mqtt-ca",
        default=None,
        metavar="FILE",
        help="the CA that signed the broker's certificate",
    )
    agent.add_argument(
        "--mqtt-cert",
        default=None,
        metavar="FILE",
        help="a client certificate for the broker (with --mqtt-key)",
    )
    agent.add_argument("--mqtt-key", default=None, metavar="FILE", help="its private key")
    agent.add_argument(
        "--outbox-budget",
        type=POSITIVE_INT,
        default=256 << 20,
        metavar="BYTES",
        help="outbox size that throttles ingestion (default 268435456: 256 MiB)",
    )
    agent.add_argument(
        "--status-port",
        type=int,
        default=None,
        metavar="PORT",
        help="serve GET /status (backlog, ingestion, uplink) on 127.0.0.1:PORT",
    )
    agent.add_argument(
        "--ingress-proxy",
        default="",
        metavar="HOST:PORT",
        help="reach the cloud's stream managers (where the uplink goes) through this HTTP "
        "CONNECT proxy (default: dial the addresses the master gives)",
    )
    agent.add_argument(
        "--footprint",
        choices=("normal", "small", "single"),
        default="normal",
        help="normal: each edge instance in its own process (a crash takes one instance "
        "down); small: an edge subgraph's instances on threads of its container's one "
        "process, for small devices (a crash restarts them all, from the last checkpoint); "
        "single: that container inside the agent's own process too; default normal",
    )
    agent.add_argument(
        "--workdir",
        default=None,
        metavar="DIR",
        help="its id, certificate, ingest log, outbox and edge state (default: agent/ in "
        "$HEADWATER_STATE_DIR, else ~/.local/state/headwater)",
    )
    _add_identity_arguments(agent, "agent")
    add_limit_arguments(agent)
    agent.set_defaults(func=_cmd_agent)


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


def _node_id(text: str) -> str:
    from headwater.common._ids import node_id_problem

    problem = node_id_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. site=north)")
    return key, value


def _daemon_logging(role: str) -> None:
    from headwater.common._logging import setup

    setup(role)


def _default_dir(name: str) -> Path:
    from headwater.cloud.local import state_dir

    return state_dir() / name


def _cmd_master(args: argparse.Namespace) -> int:
    from headwater._docker_cli import docker_options
    from headwater.cloud.master._main import INSECURE_WARNING, serve

    tls = _rest_tls(args)
    docker = docker_options(args)
    _daemon_logging("master")
    if args.insecure:
        print(f"headwater master: WARNING: {INSECURE_WARNING}", file=sys.stderr, flush=True)
    state = Path(args.state_dir) if args.state_dir else _default_dir("master")
    ready = Path(args.ready_file) if args.ready_file else None
    return _run_daemon(
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
        ),
    )


def _run_daemon(role: str, main: Coroutine[Any, Any, None]) -> int:
    """Run a daemon's ``main`` to its end; a port it needs that is taken (``PortInUse``,
    raised once what had started has stopped) is one line on stderr and exit status 2."""
    import asyncio

    from headwater.common._ports import PortInUse

    try:
        asyncio.run(main)
    except PortInUse as exc:
        print(f"headwater {role}: {exc}", file=sys.stderr, flush=True)
        return 2
    return 0


def _add_identity_arguments(p: argparse.ArgumentParser, role: str) -> None:
    """``--join`` and ``--insecure``: how a node gets the certificate its links use."""
    p.add_argument(
        "--join",
        type=_join_token,
        default=os.environ.get("HEADWATER_JOIN") or None,
        metavar="TOKEN",
        help=f"enrol on first start with a join token (`headwater token create --role {role}` "
        "prints one); the certificate is kept in WORKDIR/tls and the token is not needed again. "
        "Default: $HEADWATER_JOIN, which, unlike a command line, other users of the machine "
        "cannot read in /proc",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="development only: plaintext links to a master started with --insecure",
    )


def _join_token(text: str) -> Any:
    from headwater.common.security import JoinToken

    try:
        return JoinToken.parse(text)
    except HeadwaterError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def warn_insecure(what: str) -> None:
    print(
        f"headwater {what}: WARNING: --insecure: its links are plaintext and unauthenticated; "
        "anyone who reaches them can run code or read data. Development only.",
        file=sys.stderr,
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

    _daemon_logging("worker")
    # the same workdir is the same node (its id is kept there): a second worker on this
    # machine needs a --workdir of its own
    workdir = Path(args.workdir) if args.workdir else _default_dir("worker")
    if args.insecure:
        warn_insecure("worker")
    return _run_daemon(
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


def _mqtt_security(args: argparse.Namespace) -> dict[str, Any]:
    """The broker's credentials and TLS from the agent's options, each file checked."""
    for flag, path in (
        ("--mqtt-password-file", args.mqtt_password_file),
        ("--mqtt-ca", args.mqtt_ca),
        ("--mqtt-cert", args.mqtt_cert),
        ("--mqtt-key", args.mqtt_key),
    ):
        if path is not None and not os.access(path, os.R_OK):
            raise HeadwaterError(f"{flag} {path!r}: no readable file there")
    if (args.mqtt_cert is None) != (args.mqtt_key is None):
        raise HeadwaterError("--mqtt-cert and --mqtt-key go together: give both or neither")
    password = os.environ.get("HEADWATER_MQTT_PASSWORD")
    if args.mqtt_password_file is not None:
        password = Path(args.mqtt_password_file).read_text().strip("\r\n")
    if password is not None and args.mqtt_username is None:
        raise HeadwaterError("an MQTT password needs --mqtt-username")
    if args.mqtt_username is not None and not (args.mqtt_tls or args.mqtt_ca or args.mqtt_cert):
        log_warning = "the MQTT password goes to the broker in clear: add --mqtt-tls or --mqtt-ca"
        print(f"headwater agent: warning: {log_warning}", file=sys.stderr)
    return {
        "username": args.mqtt_username,
        "password": password,
        "tls": args.mqtt_tls,
        "ca_file": args.mqtt_ca,
        "cert_file": args.mqtt_cert,
        "key_file": args.mqtt_key,
    }


def _cmd_agent(args: argparse.Namespace) -> int:
    import asyncio
    import signal as signals

    from headwater import __version__
    from headwater.common.node import node_identity
    from headwater.edge import Agent, MqttSource

    _daemon_logging("agent")
    if args.insecure:
        warn_insecure("agent")
    workdir = Path(args.workdir) if args.workdir else _default_dir("agent")
    mqtt = None
    if args.mqtt:
        host, _, port = args.mqtt.rpartition(":")
        if not host or not port.isdigit():
            raise HeadwaterError(f"--mqtt {args.mqtt!r}: give HOST:PORT, e.g. 127.0.0.1:1883")
    # the broker keeps a session's readings under its client id: the node id, kept in the
    # workdir, so it holds across restarts and two gateways on one broker never share one
    node_id = node_identity(workdir, "agent", args.id)
    if args.mqtt:
        mqtt = MqttSource(
            host,
            int(port),
            tuple(args.topic or ["sensors/#"]),
            client_id=f"headwater-{node_id}",
            **_mqtt_security(args),
        )

    async def main() -> None:
        agent = Agent(
            args.master,
            workdir,
            node_id=node_id,
            labels=dict(args.label),
            version=__version__,
            mqtt=mqtt,
            outbox_budget=args.outbox_budget,
            status_port=args.status_port,
            ingress_proxy=args.ingress_proxy,
            insecure=args.insecure,
            join_token=args.join,
            limits=limits_of(args),
            isolation=args.isolation,
            footprint=args.footprint,
        )
        loop = asyncio.get_running_loop()
        for s in (signals.SIGTERM, signals.SIGINT):
            loop.add_signal_handler(s, agent.stopping.set)
        await agent.run()

    return _run_daemon("agent", main())
