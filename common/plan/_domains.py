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

A component a move placed elsewhere is marked (its config ``headwater.handover``, from
``headwater_placement.json``): wherever it now runs, the cloud subgraph has it in the cloud,
with its inputs crossing as they would if it ran there, its factory wrapped in a
*hand-over* bolt (``runtime/_handover_bolt.py``) that runs the user's code on what reaches
it in the cloud and is also the receiver of its edge copies' rows, under its name, so its
readers subscribe unchanged. So the cloud's subgraph is the same before and after each
agent switches, and each record is handled by the copy its agent's placement says
(docs/design.md, "Moving a subgraph between edge and cloud").
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from dataclasses import replace

from ..api import (
    Bolt,
    ComponentSpec,
    Input,
    Placement,
    Reliability,
    RuntimeConfig,
    Spout,
    Topology,
    global_,
)
from ..api._config import HANDOVER
from ..api._config import TOPOLOGY_TICK_TUPLE_FREQ_SECS as TICK_SECS
from ..api._system import system_component
from ._fence_streams import FENCE_FOR
from ._move_fences import Fenced, cloud_inputs, fenced, receiver_streams, sink_fence
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


def moved(spec: ComponentSpec) -> bool:
    """Whether a move marked the component (the cloud runs it as a hand-over wrapper)."""
    return bool(spec.config.get(HANDOVER))


def receives_uplink(spec: ComponentSpec) -> bool:
    """Whether a cloud component takes agents' batches: a receiver, or a hand-over wrapper."""
    return spec.kind == "spout" or (spec.kind == "bolt" and moved(spec))


def _handover(comp: ComponentSpec, fences: list[Fenced]) -> ComponentSpec:
    wrapper = system_component("handover", Bolt, component=comp.name, inner=comp.factory)
    return replace(comp, factory=wrapper, placement=Placement(), inputs=cloud_inputs(comp, fences))


def cloud_part(topology: Topology) -> Topology:
    """The cloud subgraph: boundary components become uplink receivers, other edge ones go;
    a moved component runs in the cloud as a hand-over wrapper (one that declares its keys'
    sites also reads its edge inputs' fences)."""
    if not has_edge(topology) and not any(moved(c) for c in topology.components):
        return topology
    fences = fenced(topology)
    topology = replace(
        topology,
        components=tuple(_handover(c, fences) if moved(c) else c for c in topology.components),
    )
    edges = boundary(topology)
    components: list[ComponentSpec] = []
    for comp in topology.components:
        if not comp.placement.is_edge:
            components.append(comp)
        elif comp.name in edges:
            streams = tuple(s for s in comp.streams if s.name in edges[comp.name])
            streams = receiver_streams(comp, streams, fences)
            receiver = system_component("uplink_receiver", Spout, component=comp.name)
            components.append(ComponentSpec(comp.name, "spout", receiver, 1, (), streams))
    return replace(topology, components=tuple(components))


def edge_part(topology: Topology, labels: Mapping[str, str]) -> Topology:
    """The edge subgraph an agent with ``labels`` runs, with an outbox sink per boundary."""
    edges = boundary(topology)
    components: list[ComponentSpec] = []
    rc = RuntimeConfig.from_mapping(topology.config)
    exactly_once = rc.reliability is Reliability.EXACTLY_ONCE
    fences = fenced(topology)
    for comp in topology.components:
        if not comp.placement.matches(labels):
            continue
        components.append(comp)
        if comp.name in edges:
            config: dict[str, object] = {SYSTEM: True}
            if not exactly_once:
                config[TICK_SECS] = 0.2  # no checkpoints: the sink flushes on a tick
            fence = sink_fence(comp.name, fences)  # a move's fence, among its rows
            if fence is not None:
                config[FENCE_FOR] = fence
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
