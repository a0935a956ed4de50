"""`headwater run|status|activate|deactivate|demo`: a topology run on this machine as a local
cluster, and the state and figures of a running one (local or on a master)."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from headwater._argtypes import POSITIVE_INT, SECONDS, whole
from headwater._master_client import Client, add_client_options, read_token
from headwater._run_loop import run_until_stopped
from headwater.common._exceptions import HeadwaterError


def add_parsers(sub: Any, master_help: str) -> None:
    run = sub.add_parser(
        "run",
        help="run a topology file as a local cluster of real processes",
        usage="headwater run FILE [options] [-- ARGS ...]",
        epilog="ARGS after `--` reach the file as sys.argv[1:] in every process that runs it "
        "(heronpy examples read their topology name from sys.argv[1]).",
    )
    run.add_argument("file", help="a Python file defining one topology (any API style)")
    run.add_argument(
        "--containers",
        type=POSITIVE_INT,
        default=1,
        metavar="N",
        help="containers (stream managers) to spread instances over (default 1)",
    )
    run.add_argument(
        "--duration",
        type=SECONDS,
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
    run.add_argument(
        "--keep-logs",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the processes' logs (task-N.log, container-N.log, tmaster.log) after the "
        "run and print where (default: kept; a temporary work directory's state, credentials "
        "and sockets are deleted either way)",
    )
    run.add_argument("--quiet", action="store_true", help="no periodic status lines")
    run.add_argument(
        "--insecure",
        action="store_true",
        help="development only: plaintext links between its processes and an API without tokens",
    )
    run.set_defaults(func=_cmd_run, topology_args=[])

    status = sub.add_parser("status", help="show a running topology's plan and metrics")
    status.add_argument("topology", nargs="?", help="topology name (default: the only one running)")
    add_client_options(status, master_help, "--tmaster")
    status.add_argument("--json", action="store_true", help="print the raw JSON")
    status.set_defaults(func=_cmd_status)

    for name, verb in (("activate", "resume"), ("deactivate", "pause")):
        s = sub.add_parser(name, help=f"{verb} a running topology's spouts")
        s.add_argument("topology", nargs="?", help="topology name (default: the only one running)")
        add_client_options(s, master_help, "--tmaster")
        s.set_defaults(func=_cmd_state, action=name)

    demo = sub.add_parser("demo", help="run the bundled demo on this machine")
    demo.add_argument(
        "--duration",
        type=SECONDS,
        default=None,
        metavar="S",
        help="stop after S seconds (default: run until Ctrl-C or SIGTERM)",
    )
    demo.add_argument(
        "--speedup",
        type=whole(2, 100),
        default=10,  # headwater._demo.run.SPEEDUP (a test checks), not imported: a slow import
        metavar="N",
        help="the sensors' clock runs N times the wall clock until it reaches the real time "
        "(more history sooner: the model trains earlier; default: %(default)s)",
    )
    demo.set_defaults(func=_cmd_demo)


def split_topology_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """``run FILE ... -- ARGS``: the command line before ``--``, and ARGS (for the file)."""
    if argv[:1] == ["run"] and "--" in argv:
        cut = argv.index("--")
        return argv[:cut], argv[cut + 1 :]
    return argv, []


def _cmd_run(args: argparse.Namespace) -> int:
    from headwater.cloud.local import LocalCluster
    from headwater.common.plan._loader import ARGS_ENV

    if args.insecure:
        from headwater._daemon_cli import warn_insecure

        warn_insecure("run")
    try:  # the topology is loaded and packed here, before any process starts
        cluster = LocalCluster(
            args.file,
            containers=args.containers,
            topology=args.topology,
            workdir=args.workdir,
            env={ARGS_ENV: json.dumps(args.topology_args)} if args.topology_args else None,
            insecure=args.insecure,
            keep_logs=args.keep_logs,
        )
    except KeyboardInterrupt:
        print("stopped during start-up", flush=True)
        return 0
    code = _run_cluster(cluster, args.duration, args.quiet)
    if cluster.logs_kept:
        print(f"logs kept in {cluster.workdir}", flush=True)
    return code


def _run_cluster(cluster: Any, duration: float | None, quiet: bool) -> int:
    def announce() -> None:
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

    return run_until_stopped(
        cluster.start,
        cluster.stop,
        duration,
        tick,
        None if quiet else lambda: _print_brief(cluster),
        lambda: _print_status(cluster.summary(), cluster.metrics(), cluster.get("/checkpoints")),
        announce,
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
            if not names:
                raise HeadwaterError(
                    f"no topology runs on {url}; submit one with `headwater submit FILE`"
                )
            if len(names) > 1:
                raise HeadwaterError(
                    f"{len(names)} topologies run on {url} ({', '.join(names)}): name one"
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
    if "errors" in summary:  # as the console's DAG flags them, the edge's included
        print(
            f"errors {int(summary['errors'])}: {int(summary['dead_letters'])} dead letters, "
            f"{int(summary['exceptions'])} task crashes, {int(summary['failed'])} failed tuples"
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
    _print_edge(summary.get("edge"))
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


def _print_edge(edge: dict[str, Any] | None) -> None:
    """The edge subgraph a master reports: each component, its selector, its agents."""
    if not edge or not edge.get("components"):
        return
    print(f"{'edge component':<20}{'runs on':<24}agents")
    for c in edge["components"]:
        where = ",".join(f"{k}={v}" for k, v in sorted(c["selector"].items())) or "every agent"
        uplink = "  (uplink to the cloud)" if c["uplink"] else ""
        print(f"{c['name']:<20}{where:<24}{', '.join(c['agents']) or '-'}{uplink}")


def _cmd_demo(args: argparse.Namespace) -> int:
    from headwater._demo.run import Demo

    print(
        "Headwater demo: sensors -> MQTT -> edge agents (durable log, edge subgraph, "
        "outbox) -> uplink -> a cloud worker, every piece a real process."
    )
    demo = Demo(speedup=args.speedup)
    return run_until_stopped(
        demo.start, demo.stop, args.duration, demo.tick, demo.report, demo.report
    )
