"""`headwater agent`: the edge agent daemon's options (its broker, its outbox, its status
port, its footprint) and how it starts."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from headwater._argtypes import POSITIVE_INT, masters, whole
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


def add_agent_parser(sub: Any) -> None:
    agent = sub.add_parser("agent", help="run the edge agent daemon on a gateway")
    agent.add_argument(
        "--master",
        default=None,
        type=masters,
        metavar="HOST:PORT[,HOST:PORT...]",
        help="the master's gRPC address, or every master's, comma-separated, where standby "
        "masters run (default: find it by zeroconf)",
    )
    agent.add_argument(
        "--id",
        type=node_id_arg,
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
        "--max-edge-tasks",
        type=whole(1, 10_000, what="a number of tasks"),
        default=16,
        metavar="N",
        help="the most tasks one topology's edge subgraph may have here when the master's "
        "health manager rescales it (its footprint limit; default 16)",
    )
    agent.add_argument(
        "--workdir",
        default=None,
        metavar="DIR",
        help="its id, certificate, ingest log, outbox and edge state (default: agent/ in "
        "$HEADWATER_STATE_DIR, else ~/.local/state/headwater)",
    )
    add_identity_arguments(agent, "agent")
    add_limit_arguments(agent)
    agent.set_defaults(func=_cmd_agent)


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE (e.g. site=north)")
    return key, value


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

    daemon_logging("agent")
    if args.insecure:
        warn_insecure("agent")
    workdir = Path(args.workdir) if args.workdir else default_dir("agent")
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
            max_edge_tasks=args.max_edge_tasks,
        )
        loop = asyncio.get_running_loop()
        for s in (signals.SIGTERM, signals.SIGINT):
            loop.add_signal_handler(s, agent.stopping.set)
        await agent.run()

    return run_daemon("agent", main())
