"""DS2's target parallelism: each component's, in one step, from its true rates.

After Kalavri et al., "Three steps is all you need" (OSDI '18). In topological order: a
source's target output is its demand (what it emitted, scaled up by the share of time it
was held back: ``rate / (1 - bp)``, with the scale capped); a component's target input is
the sum of its upstreams' target outputs; its target output is that input times its
selectivity (emitted per executed); its target parallelism is
``ceil(target input / (true processing rate per task * target utilization))``. Sources
keep their parallelism: their rate is the demand, not a capacity. A component with no busy
time measured keeps its parallelism too. A source whose demand is known better (an edge
spout: what it emitted plus how fast its ingest backlog grew) is given it (``demands``). An
edge component run by several agents (``copies``) is rescaled on each of them alike: its
target is the tasks one agent needs for its share of the demand (the agents taken as
ingesting alike).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ._model import ComponentInfo
from ._rates import ComponentRates

# A source held back for most of the interval says little about its demand: the scale-up is
# capped (rate / (1 - bp) is at most this many times the rate).
MAX_DEMAND_SCALE = 4.0


def topological(components: Mapping[str, ComponentInfo]) -> list[str]:
    """The components, each after its upstreams (a cycle's rest in name order at the end)."""
    done: list[str] = []
    seen: set[str] = set()
    pending = sorted(components)
    while pending:
        ready = [
            n
            for n in pending
            if all(u in seen or u not in components for u, _ in components[n].inputs)
        ]
        if not ready:
            ready = pending[:1]
        for n in ready:
            done.append(n)
            seen.add(n)
        pending = [n for n in pending if n not in seen]
    return done


def held_back(
    name: str, components: Mapping[str, ComponentInfo], rates: Mapping[str, ComponentRates]
) -> float:
    """The share of time a source was held back: its own, or any of its downstreams'."""
    downstream = {name}
    grew = True
    while grew:
        grew = False
        for c in components.values():
            if c.name not in downstream and any(u in downstream for u, _ in c.inputs):
                downstream.add(c.name)
                grew = True
    return max((rates[n].backpressure for n in downstream if n in rates), default=0.0)


def demand(rate: float, backpressure: float) -> float:
    """A source's demand: what it emitted, scaled up by the time it was held back (capped)."""
    scale = 1.0 / (1.0 - backpressure) if backpressure < 1.0 else MAX_DEMAND_SCALE
    return rate * min(scale, MAX_DEMAND_SCALE)


def target_rates(
    components: Mapping[str, ComponentInfo],
    rates: Mapping[str, ComponentRates],
    demands: Mapping[str, float] | None = None,
) -> dict[str, float]:
    """Each component's target input rate (a source's: its demand, ``demands``' if given)."""
    out: dict[str, float] = {}  # target output rates
    inputs: dict[str, float] = {}
    for name in topological(components):
        info, r = components[name], rates.get(name)
        if info.source or not info.inputs:
            emitted = r.emitted if r is not None else 0.0
            if demands is not None and name in demands:
                inputs[name] = demands[name]
            else:
                inputs[name] = demand(emitted, held_back(name, components, rates))
            out[name] = inputs[name]
            continue
        inputs[name] = sum(out.get(u, 0.0) for u, _ in info.inputs)
        out[name] = inputs[name] * (r.selectivity if r is not None else 1.0)
    return inputs


def targets(
    components: Mapping[str, ComponentInfo],
    rates: Mapping[str, ComponentRates],
    utilization: float,
    demands: Mapping[str, float] | None = None,
) -> dict[str, int]:
    """Each component's DS2 target parallelism (unbounded: the guards clamp it)."""
    wanted = target_rates(components, rates, demands)
    result: dict[str, int] = {}
    for name, info in components.items():
        r = rates.get(name)
        true = r.true_processing if r is not None else None
        if info.source or not info.inputs or true is None or true <= 0:
            result[name] = info.parallelism
            continue
        per_task = true * utilization * max(info.copies, 1)
        result[name] = max(1, math.ceil(wanted[name] / per_task - 1e-9))
    return result
