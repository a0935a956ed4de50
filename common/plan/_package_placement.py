"""Placement set beside the code: ``headwater_placement.json`` (issue 37, moves).

A move (``headwater move``, ``POST .../move``) places components elsewhere without a new
topology file: the running package plus, beside its topology file, this file::

    {"windows": "edge", "score": "edge(site=plant-1)", "site": "cloud"}

Each value is a placement as ``parse_placement`` reads it: ``cloud``, ``edge`` (every
agent) or ``edge(LABEL=VALUE,...)``, or, as a move writes it, ``{"to": PLACEMENT, "from":
PLACEMENT}``: placed at ``to``, and marked as moved from ``from`` (the component config
``headwater.handover``), so the cloud runs it as a hand-over wrapper while agents switch
(``_domains.cloud_part``). Loading the topology file (``_loader``), in every
process that loads it (the master's child loader, workers, agents), places those
components so, after ``headwater_attached.json`` and ``headwater_parallelism.json``, so
that the new revision is the old code at the new placement everywhere, and its diff sees
the moved components changed (placement is part of what a component is). A package the
user sends later carries its own file or none: its code says the placement again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..api import ComponentSpec, Placement, Topology
from ..api._config import HANDOVER
from ._package_parallelism import package_with_sidecar, read_sidecar

PLACEMENT_FILE = "headwater_placement.json"
"""The file, beside the topology file, placing components."""
_LABEL = re.compile(r"[A-Za-z0-9_.\-]{1,63}")
_EDGE = re.compile(r"edge(?:\((.*)\))?")


def parse_placement(text: str) -> Placement:
    """``cloud``, ``edge`` or ``edge(site=plant-1,zone=b)`` as a placement; ValueError else."""
    text = text.strip()
    if text in ("cloud", "cloud()"):
        return Placement()
    m = _EDGE.fullmatch(text)
    if m is None:
        raise ValueError(
            f"placement {text[:60]!r}: use cloud, edge (every agent) or edge(LABEL=VALUE,...)"
        )
    selector: dict[str, str] = {}
    for pair in filter(None, (p.strip() for p in (m.group(1) or "").split(","))):
        label, sep, value = (s.strip().strip("'\"") for s in pair.partition("="))
        if not sep or not _LABEL.fullmatch(label) or not _LABEL.fullmatch(value):
            raise ValueError(
                f"placement {text[:60]!r}: {pair[:40]!r} is not LABEL=VALUE (letters, digits, "
                "'_', '.', '-')"
            )
        selector[label] = value
    return Placement("edge", selector)


def placement_text(p: Placement) -> str:
    """The text ``parse_placement`` reads back as ``p``."""
    if not p.is_edge:
        return "cloud"
    if not p.selector:
        return "edge"
    return "edge(" + ",".join(f"{k}={v}" for k, v in sorted(p.selector.items())) + ")"


def placement_problem(doc: Any) -> str | None:
    """Why ``doc`` is not {component: placement text, or {"to": text, "from": text}}, or
    None."""
    if not isinstance(doc, dict) or not doc:
        return "name at least one component and where it goes"
    for name, where in doc.items():
        if not isinstance(name, str) or not name:
            return "component names are non-empty strings"
        texts = [where.get("to"), where.get("from")] if isinstance(where, dict) else [where]
        if isinstance(where, dict) and set(where) != {"to", "from"}:
            return f'{name}: a move\'s placement is {{"to": PLACEMENT, "from": PLACEMENT}}'
        for text in texts:
            if not isinstance(text, str):
                return f"{name}: a placement is text: cloud, edge or edge(LABEL=VALUE)"
            try:
                parse_placement(text)
            except ValueError as exc:
                return f"{name}: {exc}"
    return None


def _placed(spec: ComponentSpec, where: str | dict[str, str]) -> ComponentSpec:
    """``spec`` placed as the file's value says, marked as moved if it says from where."""
    if isinstance(where, str):
        return replace(spec, placement=parse_placement(where))
    config = {**spec.config, HANDOVER: placement_text(parse_placement(where["from"]))}
    return replace(spec, placement=parse_placement(where["to"]), config=config)


def with_placement(topology: Topology, folder: Path) -> Topology:
    """``topology`` with the placement ``folder``'s file sets; as it is without the file."""
    doc = read_sidecar(topology, folder, PLACEMENT_FILE, placement_problem)
    if doc is None:
        return topology
    components = tuple(_placed(c, doc[c.name]) if c.name in doc else c for c in topology.components)
    return replace(topology, components=components)


def package_with_placement(
    data: bytes, entry_file: str, changes: Mapping[str, str | dict[str, str]]
) -> bytes:
    """``data`` (a checked package) with ``changes`` merged into its placement file."""
    return package_with_sidecar(data, entry_file, PLACEMENT_FILE, changes, placement_problem)
