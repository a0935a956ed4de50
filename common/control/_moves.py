"""Moves: whether components may run elsewhere (edge <-> cloud), and why not (issue 37).

A move is a revision whose only difference is where the named components run
(``headwater_placement.json`` beside the running file, ``common/plan/_package_placement``).
``move_problem`` says why a move cannot be made, before anything changes:

- a spout reads its source where it runs (an agent's log, a cloud queue): it stays;
- every input of a moved component must be available on the target side: a component
  moved to the edge reads only edge components of the same selector (streams flow from
  the edge to the cloud, and an edge subgraph runs whole on each agent);
- no stream may cross the boundary twice: a component moved to the cloud must not feed
  one that stays on the edge (edge -> cloud -> edge is a cycle across the boundary);
- a component with keyed state (a fields-grouped input, or a declared ``state_schema``)
  must declare which agent owns each key (``config=sites(FIELD)``,
  ``headwater.placement.sites``), a field of its keyed input, so that its state can be
  split among the agents or merged from them.

The result must also validate as any edit's does (``check_edit``).
"""

from __future__ import annotations

from collections.abc import Iterable

from headwater.common.api import ComponentSpec, Placement, Reliability, RuntimeConfig, Topology
from headwater.common.api._config import HANDOVER, SITES
from headwater.common.plan import boundary
from headwater.common.plan._description import STATE_SCHEMA
from headwater.common.plan._validate import SYSTEM


def where(p: Placement) -> str:
    """A placement as a person reads it: ``the cloud``, ``edge()``, ``edge(site=a)``."""
    if not p.is_edge:
        return "the cloud"
    return "edge(" + ", ".join(f"{k}={v}" for k, v in sorted(p.selector.items())) + ")"


def keyed(spec: ComponentSpec) -> bool:
    """Whether the component is expected to keep keyed state (as a rescale expects)."""
    return any(i.grouping.kind == "fields" for i in spec.inputs) or (
        getattr(spec.factory, STATE_SCHEMA, None) is not None
    )


def _site_problem(spec: ComponentSpec, by_name: dict[str, ComponentSpec]) -> str | None:
    """Why a keyed component's state cannot follow it (no key -> site relation), or None."""
    if not keyed(spec):
        return None
    field = spec.config.get(SITES)
    if not isinstance(field, str) or not field:
        return (
            f"{spec.name!r} keeps keyed state and declares no key -> site relation, so its "
            "state cannot be split among the agents or merged from them: declare which field "
            f"of its input names the key's site (config=sites('site'), "
            "headwater.placement.sites) and submit that code first"
        )
    for inp in spec.inputs:
        src = by_name.get(inp.component)
        stream = next((s for s in src.outputs if s.name == inp.stream), None) if src else None
        if inp.grouping.kind == "fields" and stream is not None and field not in stream.fields:
            return (
                f"{spec.name!r} declares its keys' site in field {field!r}, but its input "
                f"{inp.component}:{inp.stream} has no such field ({', '.join(stream.fields)})"
            )
    return None


def move_problem(old: Topology, new: Topology, names: Iterable[str]) -> str | None:
    """Why moving ``names`` from where they run in ``old`` to where ``new`` places them
    cannot be done live; None when it can (``new`` differs from ``old`` only there)."""
    names = list(names)
    if not names:
        return "name the components to move"
    if RuntimeConfig.from_mapping(old.config).reliability is not Reliability.EXACTLY_ONCE:
        return (
            f"topology {old.name!r} is not exactly-once: a move switches at a checkpoint "
            "barrier, so it needs topology.reliability.mode EFFECTIVELY_ONCE"
        )
    before = {c.name: c for c in old.components}
    after = {c.name: c for c in new.components}
    unknown = sorted(set(names) - set(before))
    if unknown:
        return f"topology {old.name!r} has no component {', '.join(unknown)}"
    for name in names:
        a, b = before[name], after[name]
        if a.config.get(SYSTEM):
            return f"{name!r} is the runtime's own component: it cannot be moved"
        if a.kind == "spout":
            return (
                f"{name!r} is a spout: it reads its source where it runs, so it cannot move "
                "(move what reads it instead)"
            )
        if a.placement == b.placement:
            return f"{name!r} already runs at {where(a.placement)}: nothing to move"
    for name in names:
        problem = _inputs_problem(after[name], after) or _site_problem(after[name], after)
        if problem is not None:
            return problem
    moved = set(names)
    for comp in new.components:
        for inp in comp.inputs:
            src = after.get(inp.component)
            if src is None or not comp.placement.is_edge or not (moved & {src.name, comp.name}):
                continue
            if not src.placement.is_edge or src.placement.selector != comp.placement.selector:
                return (
                    f"the move would cross the edge/cloud boundary twice: {comp.name!r} stays "
                    f"at {where(comp.placement)} but reads {src.name!r}, which would run at "
                    f"{where(src.placement)} (edge -> cloud -> edge is a cycle across the "
                    f"boundary): move {comp.name!r} with it, or leave {src.name!r} where it is"
                )
    return None


def _inputs_problem(spec: ComponentSpec, after: dict[str, ComponentSpec]) -> str | None:
    """Why a moved component's inputs are not available where it goes, or None."""
    if not spec.placement.is_edge:
        return None  # every stream reaches the cloud: the edge's through the uplink
    for inp in spec.inputs:
        src = after.get(inp.component)
        if src is None:
            continue  # validation names it
        if not src.placement.is_edge:
            return (
                f"the inputs of {spec.name!r} are not available at {where(spec.placement)}: "
                f"it reads {src.name!r}, which runs in the cloud, and streams flow from the "
                f"edge to the cloud only: move {src.name!r} with it, or leave {spec.name!r} "
                "in the cloud"
            )
        if src.placement.selector != spec.placement.selector:
            return (
                f"the inputs of {spec.name!r} are not available at {where(spec.placement)} as "
                f"one subgraph: it reads {src.name!r}, which runs at {where(src.placement)}, "
                f"and an edge subgraph runs whole on each agent: move it to "
                f"{where(src.placement)}, or move {src.name!r} with it"
            )
    return None


def switch_not_built(old: Topology, new: Topology, names: Iterable[str]) -> str | None:
    """Why the live switch of a move that ``move_problem`` lets through is not built yet, or
    None: what is built moves components without keyed state, a keyed one alone, either
    way, and one alone whose edge input the cloud also reads (docs/design.md, "Moving a
    subgraph between edge and cloud")."""
    moved = set(names)
    for name in sorted(moved):
        spec = new.component(name)
        if not keyed(spec):
            continue
        if len(moved) > 1:
            return (
                f"the move of {name!r} checks out, but moving a keyed component with others "
                f"is not built yet (its state rides its input's fence): move {name!r} by "
                "itself first; nothing changed"
            )
        sources = {i.component for i in spec.inputs if new.component(i.component).placement.is_edge}
        if len(sources) != 1:
            return (
                f"the move of {name!r} checks out, but it reads {len(sources)} edge "
                "components, and its state rides the fence of one input: moving a keyed "
                "component with several edge inputs is not built yet; nothing changed"
            )
    crossing = boundary(old)
    for name in sorted(moved):
        was = old.component(name)
        if name in crossing and not was.config.get(HANDOVER) and was.parallelism != 1:
            return (
                f"the move of {name!r} checks out, but its code places it on the edge, so the "
                f"cloud has one receiver task of its rows, which the move would make "
                f"{was.parallelism} tasks running it: handing that receiver's state to the "
                "first of them is not built yet; move it at parallelism 1 (headwater replace "
                "--parallelism), or place it in the cloud by its code; nothing changed"
            )
    for name in sorted(moved):
        for inp in new.component(name).inputs:
            src = new.component(inp.component)
            if not src.placement.is_edge or src.name in moved:
                continue
            others = sorted(
                c.name
                for c in (*old.components, *new.components)
                if c.name not in moved
                and not c.placement.is_edge
                and any(i.component == src.name for i in c.inputs)
            )
            if others and len(moved) > 1:
                return (
                    f"the move of {name!r} checks out, but {src.name!r}, which it reads, is "
                    f"also read in the cloud by {', '.join(sorted(set(others)))}, so the cloud "
                    f"splits what each agent sends of {src.name!r} at its switch, which is not "
                    f"built yet for several moved components: move {name!r} by itself; "
                    "nothing changed"
                )
    return None
