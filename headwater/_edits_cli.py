"""`headwater attach|replace|remove|rollback|move|revisions`: live edits against the master."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any
from urllib.parse import urlencode

from headwater._master_client import Client, add_client_options
from headwater.common._exceptions import HeadwaterError

WAIT_S = 120.0


def add_parsers(sub: Any, master_help: str) -> None:
    def common(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--base",
            type=int,
            required=True,
            metavar="REV",
            help="the revision this edit was made against (`headwater revisions`)",
        )
        p.add_argument("--author", default="", help="who made the edit (kept in the history)")
        p.add_argument(
            "--no-wait",
            action="store_true",
            help="return once accepted instead of waiting until it is applied",
        )
        add_client_options(p, master_help)

    for action, help_, file_help, names_help in (
        (
            "attach",
            "add components to a running topology, live",
            "the topology file with the new components in it",
            "the components it adds (checked against the file)",
        ),
        (
            "replace",
            "run new code for components, keeping their state",
            "the topology file with the new code",
            "the components it replaces (default: every changed one)",
        ),
    ):
        p = sub.add_parser(action, help=help_)
        p.add_argument("topology", help="the running topology's name")
        if action == "replace":
            p.add_argument("file", nargs="?", default=None, help=f"{file_help} (or --parallelism)")
            p.add_argument(
                "--parallelism",
                action="append",
                default=[],
                type=_scale,
                metavar="COMPONENT=N",
                help="run the current code with N instances of COMPONENT (repeatable; no file)",
            )
        else:
            p.add_argument("file", help=file_help)
        p.add_argument("--components", default="", metavar="A,B", help=names_help)
        common(p)
        p.set_defaults(func=_cmd_edit, action=action)

    remove = sub.add_parser("remove", help="drain and stop components of a running topology")
    remove.add_argument("topology", help="the running topology's name")
    remove.add_argument(
        "components", nargs="+", metavar="COMPONENT", help="the components to drain and stop"
    )
    remove.add_argument("--file", default=None, help="the topology file without them (optional)")
    common(remove)
    remove.set_defaults(func=_cmd_edit, action="remove")

    rollback = sub.add_parser("rollback", help="run an earlier revision's code again, live")
    rollback.add_argument("topology", help="the running topology's name")
    rollback.add_argument(
        "to", type=int, metavar="REV", help="an applied revision whose code to run again"
    )
    common(rollback)
    rollback.set_defaults(func=_cmd_edit, action="rollback")

    move = sub.add_parser("move", help="place running components elsewhere, edge <-> cloud, live")
    move.add_argument("topology", help="the running topology's name")
    move.add_argument("components", nargs="+", metavar="COMPONENT", help="the components to move")
    move.add_argument(
        "--to",
        required=True,
        metavar="WHERE",
        help="cloud, edge (every agent) or 'edge(LABEL=VALUE,...)'",
    )
    move.add_argument(
        "--dry-run", action="store_true", help="check the move and show what it would change"
    )
    common(move)
    move.set_defaults(func=_cmd_move)

    revisions = sub.add_parser("revisions", help="list a topology's revisions")
    revisions.add_argument("topology", help="the running topology's name")
    revisions.add_argument("--json", action="store_true", help="print the raw JSON")
    add_client_options(revisions, master_help)
    revisions.set_defaults(func=_cmd_revisions)


def _cmd_edit(args: argparse.Namespace) -> int:
    from headwater.common._package import build_package

    master = Client.from_args(args)
    query: dict[str, Any] = {"action": args.action, "base": args.base, "author": args.author}
    data = b""
    file = getattr(args, "file", None)
    scale = dict(getattr(args, "parallelism", []))
    if args.action == "replace" and bool(file) == bool(scale):
        raise HeadwaterError(
            "replace takes the topology file with the new code, or --parallelism COMPONENT=N "
            "to run the current code at another parallelism (not both)"
        )
    if file:
        data, query["entry"] = build_package(file)
    if scale:
        query["parallelism"] = ",".join(f"{name}:{n}" for name, n in scale.items())
    names = getattr(args, "components", "")
    if isinstance(names, str):
        names = names.split(",")
    if any(names):
        query["components"] = ",".join(n for n in names if n)
    if args.action == "rollback":
        query["to"] = args.to
    url = f"/api/v1/topologies/{args.topology}/revisions"
    record = master.call("POST", f"{url}?{urlencode(query)}", data)
    print(f"revision {record['revision']} accepted: {_describe(record['diff'])}")
    return 0 if args.no_wait else _wait_applied(master, url, record["revision"])


def _wait_applied(master: Client, url: str, rev: int) -> int:
    """Wait until revision ``rev`` is applied in the cloud (0), refused or rolled back (1)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        time.sleep(0.2)
        view = master.call("GET", url)
        rec = next(r for r in view["revisions"] if r["revision"] == rev)
        if rec["status"] == "applied":
            print(f"revision {rev} applied (from checkpoint {rec['switch_at']})")
            return 0
        if rec["status"] != "applying":
            print(f"revision {rev} {rec['status'].replace('_', ' ')}: {rec['error']}")
            return 1
    print(f"revision {rev} is still being applied after {WAIT_S:.0f}s; see `headwater revisions`")
    return 1


def _cmd_move(args: argparse.Namespace) -> int:
    master = Client.from_args(args)
    query = {
        "components": ",".join(args.components),
        "to": args.to,
        "base": args.base,
        "author": args.author,
    }
    if args.dry_run:
        query["dry_run"] = 1
    record = master.call("POST", f"/api/v1/topologies/{args.topology}/move?{urlencode(query)}")
    if args.dry_run:
        d = record["diff"]
        print(f"the move checks out: {', '.join(d['replaced'])} to {args.to}")
        print(f"  domains that switch: {', '.join(d['domains'])}; unchanged: {len(d['unchanged'])}")
        if record.get("not_built"):  # it checks out, but applying it would be a 501
            print(f"  but not yet: {record['not_built']}")
        return 0
    rev = record["revision"]
    print(f"revision {rev} accepted: move {', '.join(args.components)} to {args.to}")
    if args.no_wait:
        return 0
    rc = _wait_applied(master, f"/api/v1/topologies/{args.topology}/revisions", rev)
    if rc == 0:
        print("  each agent switches at a barrier of its own: `headwater revisions` shows where")
    return rc


def _scale(text: str) -> tuple[str, int]:
    name, sep, n = text.partition("=")
    if not sep or not name or not n.isdigit() or int(n) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not COMPONENT=N with N 1 or more")
    return name, int(n)


def _describe(diff: dict[str, list[str]]) -> str:
    parts = [f"{k} {', '.join(v)}" for k, v in diff.items() if v]
    return "; ".join(parts) or "no change"


def _cmd_revisions(args: argparse.Namespace) -> int:
    view = Client.from_args(args).call("GET", f"/api/v1/topologies/{args.topology}/revisions")
    if args.json:
        print(json.dumps(view, indent=2))
        return 0
    print(f"current revision: {view['current']}")
    for agent, rev in sorted(view.get("agents", {}).items()):
        print(f"  agent {agent}: edge subgraph at revision {rev}")
    for r in view["revisions"]:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["time"]))
        line = (
            f"{r['revision']:>4}  {r['status']:<11} {r['action']:<8} {when}  "
            f"{r['author'] or '-':<10} {r['hash'][:19]}  {_describe(r['diff'])}"
        )
        if r.get("reason"):
            line += f"\n      why: {r['reason']}"
        print(line + (f"\n      {r['error']}" if r["error"] else ""))
    return 0
