"""`headwater token create|list|revoke`: the master's tokens, through its REST API (admin).

A token is ``ID.SECRET`` with a role: ``viewer``, ``operator`` or ``admin`` for
the REST API, ``agent`` or ``worker`` to enrol a node (``--join``; the text
printed for those also names the master's enrolment port and its CA). The
secret is shown once, when it is made; the master keeps only its hash.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any
from urllib.parse import quote

from headwater._master_client import Client, add_client_options

ROLES = ("viewer", "operator", "admin", "agent", "worker")


def add_parsers(sub: Any, master_help: str) -> None:
    token = sub.add_parser("token", help="create, list and revoke tokens (needs an admin token)")
    actions = token.add_subparsers(metavar="ACTION")

    create = actions.add_parser("create", help="make a token and print it (shown only once)")
    create.add_argument(
        "--role",
        required=True,
        choices=ROLES,
        help="viewer (read), operator (activate, deactivate, edits), admin (everything); "
        "agent or worker: a join token for a node",
    )
    create.add_argument(
        "--ttl", default=None, metavar="TIME", help="lifetime: 90s, 15m, 24h, 7d (default: none)"
    )
    create.add_argument("--description", default="", metavar="TEXT", help="what it is for")
    add_client_options(create, master_help)
    create.set_defaults(func=_cmd_create)

    listing = actions.add_parser("list", help="list the tokens (never their secrets)")
    listing.add_argument("--json", action="store_true", help="print the raw JSON")
    add_client_options(listing, master_help)
    listing.set_defaults(func=_cmd_list)

    revoke = actions.add_parser("revoke", help="revoke a token at once")
    revoke.add_argument("id", metavar="ID", help="the token's id (the part before the '.')")
    add_client_options(revoke, master_help)
    revoke.set_defaults(func=_cmd_revoke)

    token.set_defaults(func=lambda args: _usage(token))


def _usage(parser: argparse.ArgumentParser) -> int:
    parser.print_help()
    return 2


def _when(epoch: float | None) -> str:
    return "never" if epoch is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def _cmd_create(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"role": args.role, "description": args.description}
    if args.ttl is not None:
        body["ttl"] = args.ttl
    made = Client.from_args(args).call("POST", "/api/v1/tokens", body=body)
    print(made["token"])  # alone on stdout: `--join $(headwater token create --role agent)`
    print(
        f"id {made['id']}, role {made['role']}, expires {_when(made['expires'])}",
        file=sys.stderr,
    )
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    tokens = Client.from_args(args).call("GET", "/api/v1/tokens")
    if args.json:
        print(json.dumps(tokens, indent=2))
        return 0
    print(f"{'id':<14}{'role':<10}{'created':<21}{'expires':<21}description")
    for t in tokens:
        print(
            f"{t['id']:<14}{t['role']:<10}{_when(t['created']):<21}{_when(t['expires']):<21}"
            f"{t['description']}"
        )
    return 0


def _cmd_revoke(args: argparse.Namespace) -> int:
    Client.from_args(args).call("DELETE", f"/api/v1/tokens/{quote(args.id, safe='')}")
    print(f"revoked token {args.id}")
    return 0
