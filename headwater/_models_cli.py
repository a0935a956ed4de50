"""`headwater models list|show|upload|register|rollout|rollback|rollouts`: the model registry.

``register`` takes a model of any kind (an ONNX file, or a JSON anomaly
document) with optional metadata (``--meta JSON`` or ``--meta @FILE``);
``show`` prints each version's kind and, for ONNX, its inputs and outputs.

``rollout`` follows the rollout until it ends and prints each step with its
time (request -> canary live -> each wave live -> all live, or the rollback and
why) and each watch's guard values; exit 0 when the version is live
everywhere, 1 when it was rolled back or failed. ``--waves 10,50,100`` rolls it
out in waves (cumulative percentages of the agents, the last 100);
``--guard 'EXPR<=BOUND'`` (repeatable) bounds a counter or a ratio of two over
each watch (``common/models/_rollout_guards.py`` says which).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from headwater._argtypes import number, whole
from headwater._master_client import Client, add_client_options
from headwater._registry_client import meta_text
from headwater.common._exceptions import HeadwaterError
from headwater.common.models._rollout_guards import parse_guard
from headwater.common.models._rollout_waves import parse_waves

VERSION = whole(1, what="a version number (1, 2, ...)")
WATCH_SECONDS = number(0, 86_400, what="a number of seconds")
RATE = number(0, 1, what="a rate (0 to 1)")
COUNT = whole(0, what="a count (0, 1, 2, ...)")

FINAL = ("done", "rolled_back", "failed")
_META_EG = '{"dataset": "orders 2026-11", "auc": 0.91}'
WAIT_MARGIN_S = 600.0  # on top of the watch: agents switching twice, and a rollback


def add_parsers(sub: Any, master_help: str) -> None:
    models = sub.add_parser("models", help="the model registry and model rollouts")
    actions = models.add_subparsers(metavar="ACTION")

    listing = actions.add_parser("list", help="every model with its latest version")
    listing.add_argument("--json", action="store_true", help="print the raw JSON")
    add_client_options(listing, master_help)
    listing.set_defaults(func=_cmd_list)

    show = actions.add_parser("show", help="a model's versions, or one version's metadata")
    show.add_argument("name", help="the model's name")
    show.add_argument(
        "version", nargs="?", type=VERSION, default=None, help="one version (default: all of them)"
    )
    show.add_argument("--json", action="store_true", help="print the raw JSON")
    add_client_options(show, master_help)
    show.set_defaults(func=_cmd_show)

    upload = actions.add_parser("upload", help="upload an artifact as the model's next version")
    upload.add_argument("name", help="the model's name (a new one starts at version 1)")
    upload.add_argument("file", help="the artifact (a headwater-model/1 JSON document)")
    add_client_options(upload, master_help)
    upload.set_defaults(func=_cmd_upload)

    register = actions.add_parser(
        "register", help="register a model of any kind (ONNX, JSON) as its next version"
    )
    register.add_argument("file", help="the model: an ONNX file or a headwater-model/1 document")
    register.add_argument("--name", required=True, help="the model's name (new: version 1)")
    register.add_argument(
        "--meta",
        default=None,
        metavar="JSON|@FILE",
        help='a small JSON object kept with it, e.g. \'{"dataset": "orders 2026-11"}\'',
    )
    add_client_options(register, master_help)
    register.set_defaults(func=_cmd_register)

    rollout = actions.add_parser(
        "rollout", help="run a version on a running component, canary first if asked"
    )
    rollout.add_argument("name", help="the model's name")
    rollout.add_argument("version", type=VERSION, help="the version to roll out")
    _target(rollout)
    rollout.add_argument(
        "--canary",
        default=None,
        metavar="LABEL=VALUE[,...]",
        help="agents whose labels match take it first (e.g. site=site0)",
    )
    rollout.add_argument(
        "--watch",
        type=WATCH_SECONDS,
        default=30.0,
        metavar="SECONDS",
        help="how long the canary is watched before all agents take it (default 30)",
    )
    rollout.add_argument(
        "--max-anomaly-rate",
        type=RATE,
        default=0.2,
        metavar="R",
        help="roll back if the canary flags more than this share of readings (default 0.2)",
    )
    rollout.add_argument(
        "--max-errors",
        type=COUNT,
        default=0,
        metavar="N",
        help="roll back if the canary's component errs more than N times (default 0)",
    )
    rollout.add_argument(
        "--waves",
        type=_waves,
        default=None,
        metavar="P,P,...,100",
        help="after the canary, waves of this cumulative share of the agents, each watched "
        "(e.g. 10,50,100; default: all at once)",
    )
    rollout.add_argument(
        "--guard",
        type=_guard,
        action="append",
        default=[],
        metavar="EXPR<=BOUND",
        help="roll back when a counter or ratio over a watch passes BOUND, e.g. "
        "'score_us/scored<=500', 'out_of_range/scored<=0.01' (repeatable; errors<=0 always)",
    )
    rollout.add_argument(
        "--no-wait", action="store_true", help="return once accepted, without following it"
    )
    add_client_options(rollout, master_help)
    rollout.set_defaults(func=_cmd_rollout)

    rollback = actions.add_parser(
        "rollback", help="return a component to the version before the latest rollout"
    )
    rollback.add_argument("name", help="the model's name")
    _target(rollback)
    rollback.add_argument("--no-wait", action="store_true", help="return once accepted")
    add_client_options(rollback, master_help)
    rollback.set_defaults(func=_cmd_rollback)

    rollouts = actions.add_parser("rollouts", help="a model's rollouts and their steps")
    rollouts.add_argument("name", help="the model's name")
    rollouts.add_argument("--json", action="store_true", help="print the raw JSON")
    add_client_options(rollouts, master_help)
    rollouts.set_defaults(func=_cmd_rollouts)


def _target(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topology", required=True, metavar="T", help="the running topology")
    p.add_argument("--component", required=True, metavar="C", help="its component")


def parse_selector(text: str) -> dict[str, str]:
    """``site=a,tier=b`` -> ``{"site": "a", "tier": "b"}``; HeadwaterError if malformed."""
    out: dict[str, str] = {}
    for part in text.split(","):
        key, eq, value = part.strip().partition("=")
        if not eq or not key or not value:
            raise HeadwaterError(f"--canary {text!r}: use LABEL=VALUE[,LABEL=VALUE] (site=a)")
        out[key] = value
    return out


def _waves(text: str) -> list[float]:
    try:
        return parse_waves(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _guard(text: str) -> str:
    try:
        return parse_guard(text).text()
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _path(name: str, rest: str = "") -> str:
    return f"/api/v1/models/{quote(name, safe='')}{rest}"


def _when(t: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _cmd_list(args: argparse.Namespace) -> int:
    models = Client.from_args(args).call("GET", "/api/v1/models")
    if args.json:
        print(json.dumps(models, indent=2))
    for m in [] if args.json else models:
        print(f"{m['name']}  latest version {m['latest']}")
    if not models and not args.json:
        print("no models (upload one: headwater models upload NAME FILE)")
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    client = Client.from_args(args)
    if args.version is not None:
        meta = client.call("GET", _path(args.name, f"/{args.version}"))
        print(json.dumps(meta, indent=2))
        return 0
    view = client.call("GET", _path(args.name))
    if args.json:
        print(json.dumps(view, indent=2))
        return 0
    print(f"model {view['name']}")
    for v in view["versions"]:
        figures = (v.get("evaluation") or {}).get("model") or {}
        extra = "  ".join(f"{k} {v}" for k, v in figures.items() if isinstance(v, int | float))
        print(
            f"  v{v['version']:<3} {_when(v['created_at'])}  {v['sha256'][:12]}  "
            f"{v['size']} bytes  {v.get('kind', '')}  {extra}".rstrip()
        )
        for side in ("inputs", "outputs"):
            for port in v.get(side) or []:
                shape = ", ".join("?" if d is None else str(d) for d in port["shape"])
                print(f"        {side[:-1]:<6} {port['name']}: {port['type']} [{shape}]")
        if v.get("metadata"):
            print(f"        metadata {json.dumps(v['metadata'], sort_keys=True)}")
    for r in view["running"]:
        canary = r["canary"]
        where = f"{r['topology']}/{r['component']} (revision {r['revision']})"
        line = f"  running on {where}: default v{r['default'] or '- (own logic)'}"
        if canary:
            on = canary.get("selector") or ", ".join(canary.get("agents") or [])
            line += f", canary v{canary['version']} on {on}"
        print(line)
        for agent, version in sorted(r["agents"].items()):
            print(f"    agent {agent}: v{version}" if version else f"    agent {agent}: own logic")
    return 0


def _cmd_upload(args: argparse.Namespace) -> int:
    try:
        data = Path(args.file).read_bytes()
    except OSError as exc:
        raise HeadwaterError(f"cannot read {args.file!r}: {exc.strerror}") from None
    got = Client.from_args(args).call("POST", _path(args.name), data)
    print(f"model {got['name']} version {got['version']} ({got['sha256'][:12]})")
    return 0


def _cmd_register(args: argparse.Namespace) -> int:
    data = _read(args.file)
    path = _path(args.name, "/versions")
    if args.meta is not None:
        text = args.meta
        if text.startswith("@"):
            text = _read(text[1:]).decode(errors="replace")
        path += "?" + urlencode({"meta": _meta(text)})
    got = Client.from_args(args).call("POST", path, data)
    print(f"model {got['name']} version {got['version']} ({got['kind']}, {got['sha256'][:12]})")
    return 0


def _meta(text: str) -> str:
    """``--meta``'s JSON object as the registry takes it (compact), checked here: an
    object over the registry's bound would not fit in the request's URL."""
    try:
        meta = json.loads(text)
    except (ValueError, RecursionError):
        raise HeadwaterError(f"--meta is not JSON: give a JSON object, e.g. {_META_EG}") from None
    if not isinstance(meta, dict):
        raise HeadwaterError(f"--meta must be a JSON object, e.g. {_META_EG}")
    return meta_text(meta)


def _read(file: str) -> bytes:
    try:
        return Path(file).read_bytes()
    except OSError as exc:
        raise HeadwaterError(f"cannot read {file!r}: {exc.strerror}") from None


def _cmd_rollout(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "version": args.version,
        "topology": args.topology,
        "component": args.component,
        "watch_s": args.watch,
        "max_anomaly_rate": args.max_anomaly_rate,
        "max_errors": args.max_errors,
    }
    if args.canary is not None:
        body["canary"] = parse_selector(args.canary)
    if args.waves is not None:
        body["waves"] = args.waves
    if args.guard:
        body["guards"] = args.guard
    client = Client.from_args(args)
    rollout = client.call("POST", _path(args.name, "/rollouts"), body=body)
    return _follow(client, args.name, rollout, args.no_wait, args.watch)


def _cmd_rollback(args: argparse.Namespace) -> int:
    body = {"topology": args.topology, "component": args.component}
    client = Client.from_args(args)
    rollout = client.call("POST", _path(args.name, "/rollback"), body=body)
    return _follow(client, args.name, rollout, args.no_wait, 0.0)


def _follow(
    client: Client, name: str, rollout: dict[str, Any], no_wait: bool, watch_s: float
) -> int:
    """Print each step as it comes; 0 if it ends done, 1 otherwise."""
    printed = 0
    start = rollout["steps"][0]["at"] if rollout["steps"] else time.time()
    waves = len(rollout.get("waves") or [100]) + 1  # the canary too
    deadline = time.monotonic() + watch_s * waves + WAIT_MARGIN_S
    while True:
        for step in rollout["steps"][printed:]:
            note = f": {step['note']}" if step["note"] else ""
            rev = f" (revision {step['revision']})" if step["revision"] else ""
            print(f"+{step['at'] - start:7.1f}s  {step['phase']}{rev}{note}", flush=True)
        printed = len(rollout["steps"])
        if no_wait or rollout["phase"] in FINAL:
            break
        if time.monotonic() > deadline:
            print(
                f"rollout {rollout['id']} is still {rollout['phase']}; see "
                f"`headwater models rollouts {name}`"
            )
            return 1
        time.sleep(0.5)
        every = client.call("GET", _path(name, "/rollouts"))
        found = next((r for r in every if r["id"] == rollout["id"]), None)
        if found is None:  # the master lost its records (a new state folder)
            raise HeadwaterError(
                f"rollout {rollout['id']} is no longer in the master's records; see "
                f"`headwater models rollouts {name}`"
            )
        rollout = found
    if no_wait:
        print(
            f"rollout {rollout['id']} accepted; follow it with `headwater models rollouts {name}`"
        )
        return 0
    for line in _stages(rollout):
        print(line)
    if rollout["error"]:
        print(f"rollout {rollout['id']} {rollout['phase'].replace('_', ' ')}: {rollout['error']}")
    return 0 if rollout["phase"] == "done" else 1


def _cmd_rollouts(args: argparse.Namespace) -> int:
    rollouts = Client.from_args(args).call("GET", _path(args.name, "/rollouts"))
    if args.json:
        print(json.dumps(rollouts, indent=2))
        return 0
    for r in rollouts:
        what = f"v{r['version']}" if r["kind"] == "rollout" else "rollback"
        canary = f" canary {r['canary']}" if r["canary"] else ""
        print(f"#{r['id']} {what} on {r['topology']}/{r['component']}{canary}: {r['phase']}")
        if len(r.get("waves") or [100]) > 1:
            print(f"    waves {', '.join(f'{w:g}%' for w in r['waves'])}")
        for step in r["steps"]:
            print(f"    {_when(step['at'])}  {step['phase']:<12} {step['note']}")
        for line in _stages(r):
            print(f"    {line}")
        if r["error"]:
            print(f"    {r['error']}")
    if not rollouts:
        print(f"no rollouts of {args.name}")
    return 0


def _stages(rollout: dict[str, Any]) -> list[str]:
    """Each watch of a rollout (the canary, each wave): its agents, guard values, verdict."""
    out = []
    for stage in rollout.get("stages") or []:
        values = ", ".join(
            f"{g['guard'].split('<=')[0]} {'-' if g['value'] is None else format(g['value'], 'g')}"
            f" ({'ok' if g['ok'] else 'out of bounds'})"
            for g in stage["guards"]
        )
        agents = ", ".join(stage["agents"]) or "no agent online"
        out.append(
            f"{stage['stage']} on {agents}: {stage['verdict']}" + (f"; {values}" if values else "")
        )
    return out
