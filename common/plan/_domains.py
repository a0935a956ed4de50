"""Checkpoint domains: a topology split into its cloud subgraph and each agent's edge subgraph.

A component placed ``edge(selector)`` runs on every agent whose labels match;
everything else runs in the cloud. Each agent's edge subgraph is its own
checkpoint domain (so an offline agent blocks no one) and the cloud is one
more. Where an edge component feeds cloud components (a *boundary*), the
edge subgraph gets an outbox sink subscribed to those streams, and the cloud
subgraph gets, in the boundary component's place and under its name, a
receiver spout that emits the same streams: the cloud components subscribe
to it unchanged. Every process of a domain derives its subgraph (and so its
task ids) from the same file with ``for_domain``; a container and its
instances are told their domain on their command line (``--domain cloud`` or
``--domain edge --labels JSON``, see ``domain_args``) and hand it to the
loader. Without one the topology runs whole, placement ignored, as
``headwater run`` does.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import replace

from ..api import Bolt, ComponentSpec, Input, Reliability, RuntimeConfig, Spout, Topology, global_
from ..api._config import TOPOLOGY_TICK_TUPLE_FREQ_SECS as TICK_SECS
from ..api._system import system_component
from ._validate import RESERVED_OUTBOX_PREFIX, SYSTEM

DOMAINS = ("cloud", "edge")
OUTBOX_PREFIX = RESERVED_OUTBOX_PREFIX


def has_edge(topology: Topology) -> bool:
    return any(c.placement.is_edge for c in topology.components)


def boundary(topology: Topology) -> dict[str, list[str]]:
    """Edge components whose streams cloud components consume: component -> streams."""
    out: dict[str, list[str]] = {}
    by_name = {c.name: c for c in topology.components}
    for comp in topology.components:
        if comp.placement.is_edge:
            continue
        for inp in comp.inputs:
            src = by_name.get(inp.component)
            if src is not None and src.placement.is_edge:
                streams = out.setdefault(src.name, [])
                if inp.stream not in streams:
                    streams.append(inp.stream)
    return out


def cloud_part(topology: Topology) -> Topology:
    """The cloud subgraph: boundary components become uplink receivers, other edge ones go."""
    if not has_edge(topology):
        return topology
    edges = boundary(topology)
    components: list[ComponentSpec] = []
    for comp in topology.components:
        if not comp.placement.is_edge:
            components.append(comp)
        elif comp.name in edges:
            streams = tuple(s for s in comp.streams if s.name in edges[comp.name])
            receiver = system_component("uplink_receiver", Spout, component=comp.name)
            components.append(ComponentSpec(comp.name, "spout", receiver, 1, (), streams))
    return replace(topology, components=tuple(components))


def edge_part(topology: Topology, labels: Mapping[str, str]) -> Topology:
    """The edge subgraph an agent with ``labels`` runs, with an outbox sink per boundary."""
    edges = boundary(topology)
    components: list[ComponentSpec] = []
    rc = RuntimeConfig.from_mapping(topology.config)
    exactly_once = rc.reliability is Reliability.EXACTLY_ONCE
    for comp in topology.components:
        if not comp.placement.matches(labels):
            continue
        components.append(comp)
        if comp.name in edges:
            config: dict[str, object] = {SYSTEM: True}
            if not exactly_once:
                config[TICK_SECS] = 0.2  # no checkpoints: the sink flushes on a tick
            inputs = tuple(Input(comp.name, s, global_()) for s in edges[comp.name])
            sink = system_component("outbox_sink", Bolt, component=comp.name)
            components.append(
                ComponentSpec(f"{OUTBOX_PREFIX}{comp.name}", "bolt", sink, 1, inputs, (), config)
            )
    return replace(topology, components=tuple(components))


def for_domain(
    topology: Topology, domain: str, labels: Mapping[str, str] | None = None
) -> Topology:
    if domain == "cloud":
        return cloud_part(topology)
    if domain == "edge":
        return edge_part(topology, labels or {})
    if domain:
        raise ValueError(f"unknown domain {domain!r}: use 'cloud' or 'edge'")
    return topology


def domain_args(domain: str | None, labels: Mapping[str, str] | None = None) -> list[str]:
    """The command-line flags that tell a container or an instance its domain."""
    if not domain:
        return []
    return ["--domain", domain, "--labels", json.dumps(dict(labels or {}), sort_keys=True)]


def add_domain_arguments(parser: argparse.ArgumentParser) -> None:
    """``--domain`` and ``--labels`` (as ``domain_args`` writes them) on a process's parser."""
    parser.add_argument(
        "--domain",
        choices=DOMAINS,
        default=None,
        help="the checkpoint domain this process runs (default: the whole topology)",
    )
    parser.add_argument(
        "--labels",
        type=json.loads,
        default={},
        help="the agent's labels, as JSON (the edge domain)",
    )
