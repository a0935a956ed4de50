"""Checkpoint domains: a topology split into its cloud subgraph and each agent's edge subgraph.

A component placed ``edge(selector)`` runs on every agent whose labels match;
everything else runs in the cloud. Each agent's edge subgraph is its own
checkpoint domain (so an offline agent blocks no one) and the cloud is one
more. Where an edge component feeds cloud components (a *boundary*), the
edge subgraph gets an outbox sink subscribed to those streams, and the cloud
subgraph gets, in the boundary component's place and under its name, a
receiver spout that emits the same streams: the cloud components subscribe
to it unchanged. Every process of a domain derives its subgraph (and so its
task ids) from the same file with ``for_domain``; the environment of the
container names the domain (``HEADWATER_DOMAIN``: ``cloud`` or ``edge``,
with the agent's labels as JSON in ``HEADWATER_AGENT_LABELS``). Without it
the topology runs whole, placement ignored, as ``headwater run`` does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import replace
from functools import partial

from ..api import ComponentSpec, Input, Reliability, RuntimeConfig, Topology, global_
from ..api._config import TOPOLOGY_TICK_TUPLE_FREQ_SECS as TICK_SECS
from ._validate import SYSTEM

DOMAIN_ENV = "HEADWATER_DOMAIN"
LABELS_ENV = "HEADWATER_AGENT_LABELS"
OUTBOX_PREFIX = "__outbox__"


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
    from ..runtime._receiver import UplinkSpout

    edges = boundary(topology)
    components: list[ComponentSpec] = []
    for comp in topology.components:
        if not comp.placement.is_edge:
            components.append(comp)
        elif comp.name in edges:
            streams = tuple(s for s in comp.streams if s.name in edges[comp.name])
            components.append(ComponentSpec(comp.name, "spout", partial(UplinkSpout, comp.name),
                                            1, (), streams))  # fmt: skip
    return replace(topology, components=tuple(components))


def edge_part(topology: Topology, labels: Mapping[str, str]) -> Topology:
    """The edge subgraph an agent with ``labels`` runs, with an outbox sink per boundary."""
    from ..runtime._outbox_sink import OutboxSink

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
            components.append(ComponentSpec(f"{OUTBOX_PREFIX}{comp.name}", "bolt",
                                            partial(OutboxSink, comp.name), 1, inputs, (),
                                            config))  # fmt: skip
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


def from_env(topology: Topology) -> Topology:
    """The subgraph of the domain this process runs in (the whole topology outside one)."""
    domain = os.environ.get(DOMAIN_ENV, "")
    if not domain:
        return topology
    labels = json.loads(os.environ.get(LABELS_ENV) or "{}")
    return for_domain(topology, domain, labels)


def domain_env(domain: str, labels: Mapping[str, str] | None = None) -> dict[str, str]:
    return {DOMAIN_ENV: domain, LABELS_ENV: json.dumps(dict(labels or {}), sort_keys=True)}
