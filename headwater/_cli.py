"""The ``headwater`` command line."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from headwater._master_client import Client, add_client_options, read_token
from headwater.common._exceptions import HeadwaterError


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args))
    except HeadwaterError as exc:
        print(f"headwater: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="headwater",
        description="Edge-to-cloud IoT streaming: run, inspect and manage topologies.",
    )
    sub = p.add_subparsers(metavar="COMMAND")

    run = sub.add_parser("run", help="run a topology file as a local cluster of real processes")
    run.add_argument("file", help="a Python file defining one topology (any API style)")
    run.add_argument(
        "--containers",
        type=_positive_int,
        default=1,
        metavar="N",
        help="containers (stream managers) to spread instances over (default 1)",
    )
    run.add_argument(
        "--duration",
        type=_positive_float,
        default=None,
        metavar="S",
        help="stop after S seconds (default: run until Ctrl-C or SIGTERM)",
    )
    run.add_argument(
        "--topology",
        default=None,
        metavar="NAME",
        help="which topology, when the file defines several",
    )
    run.add_argument(
        "--workdir",
        default=None,
        metavar="DIR",
        help="keep logs and state here; running again with the same DIR resumes "
        "an exactly-once topology from its last checkpoint",
    )
    run.add_argument("--quiet", action="store_true", help="no periodic status lines")
    run.add_argument(
        "--insecure",
        action="store_true",
        help="development only: plaintext links between its processes and an API without tokens",
    )
    run.set_defaults(func=_cmd_run)

    master_help = (
        "the master's API URL (default: $HEADWATER_MASTER, else the topology "
        "started by `headwater run` on this machine)"
    )
    status = sub.add_parser("status", help="show a running topology's plan and metrics")
    status.add_argument("topology", nargs="?", help="topology name (default: the only one running)")
    add_client_options(status, master_help, "--tmaster")
    status.add_argument("--json", action="store_true", help="print the raw JSON")
    status.set_defaults(func=_cmd_status)

    for name, verb in (("activate", "resume"), ("deactivate", "pause")):
        s = sub.add_parser(name, help=f"{verb} a running topology's spouts")
        s.add_argument("topology", nargs="?")
        add_client_options(s, master_help, "--tmaster")
        s.set_defaults(func=_cmd_state, action=name)

    master = sub.add_parser(
        "master", help="run the master daemon (topology masters, scheduler, package store, API)"
    )
    master.add_argument("--host", default="127.0.0.1", help="address to listen on for nodes")
    master.add_argument("--port", type=int, default=7070, help="gRPC port for nodes")
    _add_rest_options(master)
    master.add_argument(
        "--state-dir",
        default=None,
        metavar="DIR",
        help="where topologies, packages and checkpoints persist",
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
    master.add_argument("--ready-file", default=None, help=argparse.SUPPRESS)
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
    worker.add_argument("--workdir", default=None, metavar="DIR")
    worker.add_argument(
        "--host",
        default="127.0.0.1",
        metavar="HOST",
        help="the address its containers' stream managers listen on and give to peers and "
        "agents (their uplinks come in there); default 127.0.0.1: this machine only",
    )
    _add_identity_arguments(worker, "worker")
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
        type=_positive_int,
        default=256 << 20,
        metavar="BYTES",
        help="outbox size that throttles ingestion",
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
    agent.add_argument("--workdir", default=None, metavar="DIR")
    _add_identity_arguments(agent, "agent")
    agent.set_defaults(func=_cmd_agent)

    submit = sub.add_parser("submit", help="package a topology file and run it on the master")
    submit.add_argument("file")
    submit.add_argument("--containers", type=_positive_int, default=1, metavar="N")
    add_client_options(submit, master_help)
    submit.set_defaults(func=_cmd_submit)

    nodes = sub.add_parser("nodes", help="list the master's workers and agents")
    add_client_options(nodes, master_help)
    nodes.add_argument("--json", action="store_true", help="print the raw JSON")
    nodes.add_argument(
        "--forget",
        metavar="ID",
        default=None,
        help="forget a node that is offline and holds no containers",
    )
    nodes.add_argument(
        "--revoke",
        metavar="ID",
        default=None,
        help="cut a node off: its certificate is refused from now on (it must enrol afresh "
        "under another id)",
    )
    nodes.set_defaults(func=_cmd_nodes)

    kill = sub.add_parser("kill", help="stop a topology and remove it from the master")
    kill.add_argument("topology")
    add_client_options(kill, master_help)
    kill.set_defaults(func=_cmd_kill)

    from headwater._edits_cli import add_parsers
    from headwater._tokens_cli import add_parsers as add_token_parsers

    add_parsers(sub, master_help)
    add_token_parsers(sub, master_help)

    demo = sub.add_parser("demo", help="run the bundled demo on this machine")
    demo.add_argument("--duration", type=_positive_float, default=None, metavar="S")
    demo.set_defaults(func=_cmd_demo)
    return p


def _add_rest_options(master: argparse.ArgumentParser) -> None:
    """The master's REST API: where it listens, its TLS, and --insecure."""
    master.add_argument("--http-port", type=int, default=7071, help="REST API port")
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


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be 1 or more, got {value}")
    return value


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


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {value}")
    return value


# -- run ---------------------------------------------------------------------------
def _cmd_run(args: argparse.Namespace) -> int:
    from headwater.cloud.local import LocalCluster

    if args.insecure:
        _warn_insecure("run")
    cluster = LocalCluster(
        args.file,
        containers=args.containers,
        topology=args.topology,
        workdir=args.workdir,
        insecure=args.insecure,
    )
    return _run_cluster(cluster, args.duration, args.quiet)


def _run_until_stopped(
    start: Callable[[], None],
    stop: Callable[[], None],
    duration: float | None,
    tick: Callable[[], None],
    report: Callable[[], None] | None,
    final: Callable[[], None],
) -> int:
    """Start, then tick until Ctrl-C, SIGTERM or ``duration``; report every 5 s; stop.

    A ``HeadwaterError`` from ``tick`` (a crash loop) is printed at once, everything
    is stopped, and the exit status is 1."""
    stopping = {"signal": 0}
    code = 0

    def on_signal(signum: int, frame: object) -> None:
        stopping["signal"] = signum

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        start()
        began = time.monotonic()
        next_report = began + 5.0
        while not stopping["signal"]:
            now = time.monotonic()
            if duration is not None and now - began >= duration:
                break
            try:
                tick()
            except HeadwaterError as exc:
                print(f"headwater: error: {exc}", file=sys.stderr, flush=True)
                code = 1
                break
            if report is not None and now >= next_report:
                with contextlib.suppress(OSError):
                    report()
                next_report = now + 5.0
            time.sleep(0.1)
        if not code:
            with contextlib.suppress(OSError):
                final()
    finally:
        print("stopping...", flush=True)
        stop()
        for s, h in old.items():
            signal.signal(s, h)
    print("stopped", flush=True)
    return code


def _run_cluster(cluster: Any, duration: float | None, quiet: bool) -> int:
    def start() -> None:
        cluster.start()
        n = len(cluster.plan.instances)
        name = cluster.topology.name
        print(f"running {name!r}: {n} instances in {cluster.containers} containers", flush=True)
        print(f"  topology master: {cluster.http_address}/api/v1/topologies/{name}", flush=True)
        print(f"  logs: {cluster.workdir}", flush=True)
        print("  stop with Ctrl-C", flush=True)

    next_check = [0.0]

    def tick() -> None:
        for name in cluster.restart_dead():
            print(f"{name} died; restarted", flush=True)
        if time.monotonic() >= next_check[0]:  # a crash loop ends the run, loudly
            next_check[0] = time.monotonic() + 0.5
            cluster.check()

    return _run_until_stopped(
        start,
        cluster.stop,
        duration,
        tick,
        None if quiet else lambda: _print_brief(cluster),
        lambda: _print_status(cluster.summary(), cluster.metrics(), cluster.get("/checkpoints")),
    )


def _print_brief(cluster: Any) -> None:
    try:
        comps = cluster.metrics()["components"]
    except OSError:
        return
    parts = [
        f"{name}: emitted {int(m['emitted'])} executed {int(m['executed'])}"
        for name, m in comps.items()
    ]
    print("  " + " | ".join(parts), flush=True)


# -- status ------------------------------------------------------------------------
def _find_tmaster(args: argparse.Namespace) -> tuple[Client, str]:
    """The API serving ``args.topology`` (``--master``, ``HEADWATER_MASTER`` or the one
    ``headwater run`` started here, with the token that run keeps) and the topology's name."""
    from headwater.cloud.local import state_dir

    topology: str | None = args.topology
    url = args.url or os.environ.get("HEADWATER_MASTER")
    if url:
        client = Client.from_args(args, url.rstrip("/"))
        names = [t["name"] for t in client.call("GET", "/api/v1/topologies")]
        if topology is None:
            if len(names) != 1:
                raise HeadwaterError(
                    f"{len(names)} topologies run on {url} ({', '.join(names) or 'none'}): name one"
                )
            topology = names[0]
        return client, topology
    records = sorted(state_dir().glob("*.json"))
    running = [json.loads(p.read_text()) for p in records]
    if topology is not None:
        running = [r for r in running if r["topology"] == topology]
    if not running:
        raise HeadwaterError(
            "no running topology found"
            + (f" named {topology!r}" if topology else "")
            + "; start one with `headwater run FILE`, or pass --tmaster URL"
        )
    if len(running) > 1:
        listed = ", ".join(r["topology"] for r in running)
        raise HeadwaterError(f"several topologies are running ({listed}): name one")
    run = running[0]
    client = Client.from_args(args, run["http"])
    if client.token is None and run.get("token_file"):  # the token that run made
        client = Client(run["http"], read_token(Path(run["token_file"]), "the run's token"))
    return client, run["topology"]


def _cmd_status(args: argparse.Namespace) -> int:
    client, name = _find_tmaster(args)
    summary = client.call("GET", f"/api/v1/topologies/{name}")
    metrics = client.call("GET", f"/api/v1/topologies/{name}/metrics")
    checkpoints = client.call("GET", f"/api/v1/topologies/{name}/checkpoints")
    if args.json:
        print(
            json.dumps(
                {"topology": summary, "metrics": metrics, "checkpoints": checkpoints}, indent=2
            )
        )
    else:
        _print_status(summary, metrics, checkpoints)
    return 0


def _cmd_state(args: argparse.Namespace) -> int:
    client, name = _find_tmaster(args)
    answer = client.call("POST", f"/api/v1/topologies/{name}/{args.action}")
    print(f"{name}: {answer['state']}")
    return 0


def _print_status(
    summary: dict[str, Any], metrics: dict[str, Any], checkpoints: dict[str, Any] | None = None
) -> None:
    status = summary.get("status") or {}
    since = f"  for {status['for_s']:.0f}s" if "for_s" in status else ""
    print(
        f"topology {summary['name']}  state {summary['state']}{since}  "
        f"up {summary['uptime_s']}s  revision {summary['revision']}"
    )
    for why in status.get("waiting_for", []):
        print(f"  waiting for: {why}")
    for loop in status.get("crash_loops", []):
        print(
            f"  CRASH LOOP: {loop['key']}: {loop['failures']} failures in "
            f"{loop['over_s']:.0f}s; last: {loop['reason']}"
        )
    for reason in status.get("reasons", []):
        if "crash loop" not in reason:
            print(f"  {status['health'].upper()}: {reason}")
    print(
        f"{'component':<20}{'emitted':>12}{'executed':>12}{'acked':>10}{'failed':>10}"
        f"{'bp ms':>10}{'restarts':>10}"
    )
    for name, m in metrics["components"].items():
        print(
            f"{name:<20}{int(m['emitted']):>12}{int(m['executed']):>12}{int(m['acked']):>10}"
            f"{int(m['failed']):>10}{int(m['backpressure_ms']):>10}{int(m['restarts']):>10}"
        )
    print(
        f"{'container':<10}{'pid':>8}{'in MB':>10}{'out MB':>10}{'batches in':>12}"
        f"{'buffer KB':>11}{'bp ms':>10}"
    )
    for c, m in sorted(metrics["containers"].items()):
        print(
            f"{c:<10}{int(m.get('pid', 0)):>8}{m.get('bytes_in', 0) / 1e6:>10.1f}"
            f"{m.get('bytes_out', 0) / 1e6:>10.1f}{int(m.get('batches_in', 0)):>12}"
            f"{m.get('buffer_bytes', 0) / 1e3:>11.1f}{int(m.get('backpressure_ms', 0)):>10}"
        )
    if checkpoints and checkpoints["exactly_once"]:
        print(
            f"checkpoints every {checkpoints['interval_s']}s, epoch {checkpoints['epoch']}, "
            f"latest complete {checkpoints['latest_complete']}"
        )
        print(f"{'id':>6}  {'state':<12}{'started':<10}{'duration ms':>12}{'size KB':>10}")
        for c in checkpoints["checkpoints"][-5:]:
            started = time.strftime("%H:%M:%S", time.localtime(c["started"]))
            duration = f"{c['duration_ms']:.0f}" if c["duration_ms"] is not None else "-"
            print(
                f"{c['id']:>6}  {c['state']:<12}{started:<10}{duration:>12}"
                f"{c['size_bytes'] / 1e3:>10.1f}"
            )


# -- demo --------------------------------------------------------------------------
def _cmd_demo(args: argparse.Namespace) -> int:
    from headwater._demo.run import Demo

    print(
        "Headwater demo: sensors -> MQTT -> edge agents (durable log, edge subgraph, "
        "outbox) -> uplink -> a cloud worker, every piece a real process."
    )
    demo = Demo()
    return _run_until_stopped(
        demo.start, demo.stop, args.duration, lambda: None, demo.report, demo.report
    )


# -- daemons -------------------------------------------------------------------------
def _daemon_logging(role: str) -> None:
    from headwater.common._logging import setup

    setup(role)


def _default_dir(name: str) -> Path:
    from headwater.cloud.local import state_dir

    return state_dir() / name


def _cmd_master(args: argparse.Namespace) -> int:
    import asyncio

    from headwater.cloud.master._main import INSECURE_WARNING, serve

    tls = _rest_tls(args)
    _daemon_logging("master")
    if args.insecure:
        print(f"headwater master: WARNING: {INSECURE_WARNING}", file=sys.stderr, flush=True)
    state = Path(args.state_dir) if args.state_dir else _default_dir("master")
    ready = Path(args.ready_file) if args.ready_file else None
    asyncio.run(
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
        )
    )
    return 0


def _add_identity_arguments(p: argparse.ArgumentParser, role: str) -> None:
    """``--join`` and ``--insecure``: how a node gets the certificate its links use."""
    p.add_argument(
        "--join",
        type=_join_token,
        default=None,
        metavar="TOKEN",
        help=f"enrol on first start with a join token (`headwater token create --role {role}` "
        "prints one); the certificate is kept in WORKDIR/tls and the token is not needed again",
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


def _warn_insecure(what: str) -> None:
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
    import asyncio

    from headwater import __version__
    from headwater.cloud.worker import serve

    _daemon_logging("worker")
    # the same workdir is the same node (its id is kept there): a second worker on this
    # machine needs a --workdir of its own
    workdir = Path(args.workdir) if args.workdir else _default_dir("worker")
    if args.insecure:
        _warn_insecure("worker")
    asyncio.run(
        serve(args.master, workdir, args.id, __version__, args.host, args.insecure, args.join)
    )
    return 0


def _cmd_submit(args: argparse.Namespace) -> int:
    from urllib.parse import urlencode

    from headwater.common._package import build_package, package_hash

    master = Client.from_args(args)
    data, entry = build_package(args.file)
    query = urlencode({"entry": entry, "containers": args.containers})
    result = master.call("POST", f"/api/v1/topologies?{query}", data)
    print(
        f"submitted {result['topology']!r}: package {package_hash(data)}, "
        f"{result['containers']} containers"
    )
    return 0


def _cmd_kill(args: argparse.Namespace) -> int:
    Client.from_args(args).call("DELETE", f"/api/v1/topologies/{args.topology}")
    print(f"killed {args.topology!r}")
    return 0


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
        _warn_insecure("agent")
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
        )
        loop = asyncio.get_running_loop()
        for s in (signals.SIGTERM, signals.SIGINT):
            loop.add_signal_handler(s, agent.stopping.set)
        await agent.run()

    asyncio.run(main())
    return 0


def _cmd_nodes(args: argparse.Namespace) -> int:
    if args.forget is not None:
        from urllib.parse import quote

        Client.from_args(args).call("DELETE", f"/api/v1/nodes/{quote(args.forget, safe='')}")
        print(f"forgot node {args.forget!r}")
        return 0
    if args.revoke is not None:
        from urllib.parse import quote

        path = f"/api/v1/nodes/{quote(args.revoke, safe='')}/revoke"
        Client.from_args(args).call("POST", path)
        print(f"revoked node {args.revoke!r}: its links are refused from now on")
        return 0
    nodes = Client.from_args(args).call("GET", "/api/v1/nodes")
    if args.json:
        print(json.dumps(nodes, indent=2))
        return 0
    print(
        f"{'node':<20}{'kind':<8}{'state':<9}{'health':<10}{'seen s ago':>11}{'version':>9}"
        f"{'backlog KB':>12}  labels / containers"
    )
    for n in nodes:
        labels = ",".join(f"{k}={v}" for k, v in sorted(n["labels"].items()))
        print(
            f"{n['id']:<20}{n['kind']:<8}{'online' if n['online'] else 'offline':<9}"
            f"{n.get('health', '?'):<10}{n['last_heartbeat_s_ago']:>11.1f}{n['version']:>9}"
            f"{n['backlog_bytes'] / 1e3:>12.1f}  {labels} {' '.join(n['containers'])}"
            f"{'  ERROR: ' + n['error'] if n['error'] else ''}"
        )
        for reason in n.get("reasons", []):
            print(f"{'':<20}  - {reason}")
    return 0
