"""`headwater submit|kill|nodes`: the master's topologies and nodes."""

from __future__ import annotations

import argparse
import json
from typing import Any

from headwater._argtypes import POSITIVE_INT
from headwater._master_client import Client, add_client_options


def add_parsers(sub: Any, master_help: str) -> None:
    submit = sub.add_parser("submit", help="package a topology file and run it on the master")
    submit.add_argument(
        "file", help="the topology's Python file; its folder is sent along as its package"
    )
    submit.add_argument(
        "--containers",
        type=POSITIVE_INT,
        default=1,
        metavar="N",
        help="cloud containers (stream managers) to spread its cloud side over (default 1)",
    )
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
    kill.add_argument("topology", help="the topology's name (`headwater status` lists them)")
    add_client_options(kill, master_help)
    kill.set_defaults(func=_cmd_kill)


def _cmd_submit(args: argparse.Namespace) -> int:
    from urllib.parse import urlencode

    from headwater.common._package import build_package, package_hash

    master = Client.from_args(args)
    data, entry = build_package(args.file)
    query = urlencode({"entry": entry, "containers": args.containers})
    result = master.call("POST", f"/api/v1/topologies?{query}", data)
    print(
        f"submitted {result['topology']!r}: package {package_hash(data)}, "
        f"{result['containers']} container{'s' if result['containers'] != 1 else ''}"
    )
    return 0


def _cmd_kill(args: argparse.Namespace) -> int:
    Client.from_args(args).call("DELETE", f"/api/v1/topologies/{args.topology}")
    print(f"killed {args.topology!r}")
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
