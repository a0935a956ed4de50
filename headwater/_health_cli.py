"""`headwater health TOPOLOGY [--mode auto|recommend|off ...]`: a topology's health manager.

Without a policy option: its report (mode, diagnoses with their evidence, actions taken or
proposed, black-listed ones; ``--json`` for the raw report). With one: the policy changed
live (``PUT /api/v1/topologies/NAME/health/policy``), then the report.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from headwater._argtypes import number, whole
from headwater._master_client import Client, add_client_options

# option -> the policy field it sets
_FIELDS = {
    "mode": "mode",
    "min": "min_parallelism",
    "max": "max_parallelism",
    "target_utilization": "target_utilization",
    "stabilization": "stabilization_s",
    "cooldown": "cooldown_s",
    "scale_down_cap": "scale_down_cap",
    "blacklist": "blacklist_s",
}


def add_parsers(sub: Any, master_help: str) -> None:
    p = sub.add_parser(
        "health",
        help="a topology's health manager: its diagnoses and actions, or change its policy",
    )
    p.add_argument("topology", help="the running topology's name")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.add_argument(
        "--mode",
        choices=["auto", "recommend", "off"],
        default=None,
        help="auto: apply its actions as live edits; recommend: propose them only; off",
    )
    seconds = number(0, what="a number of seconds")
    fraction = number(0, 1, above=True, what="a fraction such as 0.7")
    for option, kind, metavar, text in (
        ("--min", whole(1, 10_000), "N", "the fewest instances a rescale leaves a component"),
        ("--max", whole(1, 10_000), "N", "the most instances a rescale gives a component"),
        ("--target-utilization", fraction, "F", "the busy share a rescale aims each task at"),
        ("--stabilization", seconds, "S", "how long a symptom lasts before a scale down"),
        ("--cooldown", seconds, "S", "after an action on a component, no other for S seconds"),
        ("--scale-down-cap", fraction, "F", "a scale down keeps at least this share of tasks"),
        ("--blacklist", seconds, "S", "an action that did not help is not repeated for S s"),
    ):
        p.add_argument(option, type=kind, default=None, metavar=metavar, help=text)
    add_client_options(p, master_help)
    p.set_defaults(func=_cmd_health)


def policy_body(args: argparse.Namespace) -> dict[str, Any]:
    """The policy fields the options set (empty: none given)."""
    return {
        field: getattr(args, option)
        for option, field in _FIELDS.items()
        if getattr(args, option) is not None
    }


def _cmd_health(args: argparse.Namespace) -> int:
    client = Client.from_args(args)
    path = f"/api/v1/topologies/{args.topology}/health"
    body = policy_body(args)
    if body:
        client.call("PUT", f"{path}/policy", body=body)
    report = client.call("GET", path)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(describe(report))
    return 0


def _action(a: dict[str, Any]) -> str:
    what = a.get("kind", "?")
    if a.get("parallelism") is not None:
        before = a.get("before")
        what += f" {a.get('component')} " + (
            f"{before} -> {a['parallelism']}" if before is not None else f"to {a['parallelism']}"
        )
    elif a.get("tasks"):
        what += f" {a.get('component')} tasks {', '.join(str(t) for t in a['tasks'])}"
    else:
        what += f" {a.get('component', '')}"
    return f"{what}: {a.get('reason', '')}"


def _hot_keys(keys: Any) -> str:
    """A skew's hot keys: each with its share of the component's load and of its task's."""
    if not isinstance(keys, list) or not keys:
        return "none sampled"
    out = []
    for k in keys:
        if not isinstance(k, dict):
            return str(keys)
        load, share = k.get("load_share"), k.get("share")
        shares = [
            f"{x:.0%} {what}"
            for x, what in ((load, "of the load"), (share, "of its task's"))
            if isinstance(x, int | float)
        ]
        out.append(f"{k.get('key')} ({', '.join(shares)})" if shares else str(k.get("key")))
    return ", ".join(out)


def _rates(f: Any) -> str:
    """A component's rates over one window (an action's ``rates_before``, ``rates_after``)."""
    if not isinstance(f, dict):
        return "-"
    try:
        return (
            f"in {f['arrival']:.1f}/s, processed {f['processed']:.1f}/s, busy {f['busy']:.0%}"
            f" (busiest {f['busy_max']:.0%})"
        )
    except (KeyError, TypeError, ValueError):
        return str(f)


def _when(at: Any) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at)) if isinstance(at, int | float) else "-"


def describe(report: dict[str, Any]) -> str:
    """The report as an operator reads it."""
    lines = [f"topology {report.get('topology', '?')}: mode {report.get('mode', '?')}"]
    policy = report.get("policy") or {}
    if policy:
        lines.append(
            f"  parallelism {policy.get('min_parallelism')}..{policy.get('max_parallelism')}, "
            f"target utilization {policy.get('target_utilization')}"
        )
    diagnoses = report.get("diagnoses") or []
    lines.append("diagnoses:" if diagnoses else "diagnoses: none")
    for d in diagnoses:
        lines.append(f"  {d.get('kind')} {d.get('component')}: {d.get('reason', '')}")
        for k, v in sorted((d.get("evidence") or {}).items()):
            lines.append(f"      {k} = {_hot_keys(v) if k == 'hot_keys' else v}")
    proposed = report.get("proposed") or []
    if proposed:
        lines.append("proposed (recommend: not applied):")
        lines += [f"  {_action(a)}" for a in proposed]
    taken = report.get("taken") or []
    lines.append("actions taken:" if taken else "actions taken: none")
    for t in taken:
        action = t.get("action") or {}
        outcome = t.get("outcome") or ""
        rev = f" (revision {t['revision']})" if t.get("revision") is not None else ""
        lines.append(f"  {_when(t.get('at'))}  {_action(action)}{rev} {outcome}".rstrip())
        if t.get("rates_before") or t.get("rates_after"):
            before, after = _rates(t.get("rates_before")), _rates(t.get("rates_after"))
            lines.append(f"      rates {before} -> {after}")
    blacklisted = report.get("blacklisted") or []
    lines.append("black-listed:" if blacklisted else "black-listed: none")
    for b in blacklisted:
        lines.append(
            f"  {b.get('kind')} {b.get('component')} until {_when(b.get('until'))}: "
            f"{b.get('why', '')}"
        )
    return "\n".join(lines)
