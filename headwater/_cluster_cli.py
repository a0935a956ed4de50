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
    for line in nodes_table(nodes):
        print(line)
    return 0


_NODE_COLUMNS = ("node", "kind", "state", "health", "seen s ago", "version", "backlog KB")
_RIGHT = {"seen s ago", "version", "backlog KB"}  # numbers, aligned on the right


def nodes_table(nodes: list[dict[str, Any]]) -> list[str]:
    """The lines `headwater nodes` prints for the REST API's ``/api/v1/nodes``: one row a
    node, each column as wide as its longest value (an id of any length stays in its
    column), two spaces between columns; then labels, containers, and the node's error;
    under a row, the reasons of its health."""
    rows = [
        (
            n["id"],
            n["kind"],
            "online" if n["online"] else "offline",
            n.get("health", "?"),
            f"{n['last_heartbeat_s_ago']:.1f}",
            n["version"],
            f"{n['backlog_bytes'] / 1e3:.1f}",
        )
        for n in nodes
    ]
    widths = [max(len(v) for v in col) for col in zip(_NODE_COLUMNS, *rows, strict=True)]

    def line(cells: tuple[str, ...], rest: str) -> str:
        out = "  ".join(
            c.rjust(w) if name in _RIGHT else c.ljust(w)
            for c, w, name in zip(cells, widths, _NODE_COLUMNS, strict=True)
        )
        return f"{out}  {rest}".rstrip()

    lines = [line(_NODE_COLUMNS, "labels / containers")]
    for n, cells in zip(nodes, rows, strict=True):
        labels = ",".join(f"{k}={v}" for k, v in sorted(n["labels"].items()))
        error = f"  ERROR: {n['error']}" if n["error"] else ""
        lines.append(line(cells, f"{labels} {' '.join(n['containers'])}".strip() + error))
        lines.extend(f"{'':<{widths[0]}}  - {reason}" for reason in n.get("reasons", []))
    return lines
