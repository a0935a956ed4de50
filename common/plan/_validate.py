"""Validation of the logical plan: every defect found, each naming its component and the fix."""

from __future__ import annotations

from .._exceptions import InvalidTopologyError
from .._ids import name_problem
from ..api import (
    TICK_COMPONENT,
    ComponentSpec,
    Input,
    Reliability,
    RuntimeConfig,
    Stream,
    Topology,
)
from ..api._config import TOPOLOGY_RELIABILITY_MODE, ContainerResources
from ..api._stream import CustomGrouping
from ..wire import SUPPORTED_TYPES, is_supported_type

SYSTEM = "headwater.system"  # config flag of components the runtime adds
RESERVED_OUTBOX_PREFIX = "__outbox__"  # the edge outboxes' names (plan/_domains.py)


def _reserved(name: str) -> bool:
    """A name the runtime gives its own components: the tick source, the edge outboxes.
    Other names may start with ``__`` (heronpy's integration tests name components so)."""
    return name == TICK_COMPONENT or name.startswith(RESERVED_OUTBOX_PREFIX)


_GROUPINGS = {"shuffle", "fields", "all", "global", "none", "direct", "custom"}


def validate(topology: Topology) -> None:
    """Raise InvalidTopologyError listing every problem; return quietly when it can run."""
    problems = _topology_problems(topology)
    by_name = {c.name: c for c in topology.components}
    for comp in topology.components:
        where = f"{comp.kind} {comp.name!r}"
        problems += _component_problems(topology, comp, where)
        problems += _stream_problems(comp, where)
        problems += _input_problems(comp, where, by_name)
    problems += _cycle_problems(topology)
    if problems:
        raise InvalidTopologyError(topology.name, problems)


def _topology_problems(topology: Topology) -> list[str]:
    """The topology as a whole: its name, unique component names, a source, its resources."""
    problems: list[str] = []
    # the name names files (a local run's record and token, the master's state folders)
    named = name_problem(topology.name, "topology name")
    if named:
        problems.append(f"{named}; rename the topology")
    seen: set[str] = set()
    for name in (c.name for c in topology.components):
        if name in seen:
            problems.append(
                f"component {name!r} is defined twice: do you have two components with the "
                "same name? Give each a unique name."
            )
        seen.add(name)
    if not topology.components:
        problems.append("the topology has no components: add at least one spout")
    elif not any(c.kind == "spout" for c in topology.components):
        problems.append("the topology has no spout: every DAG needs a source")
    try:
        ContainerResources.from_mapping(topology.config)
        RuntimeConfig.from_mapping(topology.config)  # its mode, which every component runs
    except ValueError as exc:
        problems.append(f"topology {topology.name!r}: bad config: {exc}")
    return problems


def _component_problems(topology: Topology, comp: ComponentSpec, where: str) -> list[str]:
    """One component's name, parallelism, config, and inputs for its kind."""
    problems: list[str] = []
    if not comp.name or (_reserved(comp.name) and not comp.config.get(SYSTEM)):
        problems.append(
            f"{where}: names must be non-empty and not {TICK_COMPONENT!r} or start with "
            f"{RESERVED_OUTBOX_PREFIX!r} (the runtime's own components); rename it"
        )
    if comp.parallelism < 1:
        problems.append(f"{where}: parallelism is {comp.parallelism}; use 1 or more")
    problems += _config_problems(topology, comp, where)
    if comp.kind == "spout" and comp.inputs:
        problems.append(f"{where} has inputs; spouts are sources: make it a bolt")
    if comp.kind == "bolt" and not comp.inputs:
        problems.append(f"{where} has no inputs: subscribe it to a stream or remove it")
    return problems


def _config_problems(topology: Topology, comp: ComponentSpec, where: str) -> list[str]:
    """A component's runtime config (said once for the topology when the topology's own is
    bad), and its reliability mode, which is the topology's: its checkpoints, acks and
    restores are the whole topology's (a component of another mode would snapshot without
    noting its changes, or never be restored)."""
    try:
        whole: Reliability | None = RuntimeConfig.from_mapping(topology.config).reliability
    except ValueError:
        whole = None  # the topology's own problem (``_topology_problems``)
    try:
        mine = RuntimeConfig.from_mapping(topology.merged_config(comp.name)).reliability
    except ValueError as exc:
        return [f"{where}: bad config: {exc}"] if whole is not None else []
    if whole is None or mine is whole:
        return []
    return [
        f"{where}: its config sets {TOPOLOGY_RELIABILITY_MODE} {mine.value} but the topology "
        f"runs {whole.value}; the mode is the whole topology's: set it in the topology's "
        "config only"
    ]


def _stream_problems(comp: ComponentSpec, where: str) -> list[str]:
    """The streams a component declares: unique names, unique fields, serialisable types."""
    problems: list[str] = []
    stream_names = [s.name for s in comp.outputs]
    for dup in {n for n in stream_names if stream_names.count(n) > 1}:
        problems.append(f"{where} declares stream {dup!r} twice")
    for stream in comp.outputs:
        if len(set(stream.fields)) != len(stream.fields):
            problems.append(f"{where}: stream {stream.name!r} repeats a field name")
        for fname, tp in zip(stream.fields, stream.schema or (), strict=False):
            if not is_supported_type(tp):
                ok = ", ".join(t.__name__ for t in SUPPORTED_TYPES)
                problems.append(
                    f"{where}: field {fname!r} of stream {stream.name!r} has type "
                    f"{getattr(tp, '__qualname__', tp)!r}, which cannot be serialised; "
                    f"emit one of {ok} (convert the value, e.g. to a dict or bytes)"
                )
        if stream.schema is not None and len(stream.schema) != len(stream.fields):
            problems.append(
                f"{where}: stream {stream.name!r} has {len(stream.fields)} fields but "
                f"{len(stream.schema)} schema types"
            )
    return problems


def _input_problems(
    comp: ComponentSpec, where: str, by_name: dict[str, ComponentSpec]
) -> list[str]:
    """Each subscription: a known component and stream, then its grouping."""
    problems: list[str] = []
    for inp in comp.inputs:
        src = by_name.get(inp.component)
        if src is None:
            hint = _closest(inp.component, list(by_name))
            problems.append(
                f"{where} subscribes to unknown component {inp.component!r}"
                + (f": did you mean {hint!r}?" if hint else ": add it or fix the name")
            )
            continue
        declared_stream = src.stream(inp.stream)
        if declared_stream is None:
            declared = ", ".join(repr(s.name) for s in src.outputs) or "none"
            problems.append(
                f"{where} subscribes to stream {inp.stream!r} of {inp.component!r}, which "
                f"declares no such stream (it declares: {declared}); declare it in "
                f"{inp.component!r}'s outputs"
            )
            continue
        problems += _grouping_problems(comp, where, src, inp, declared_stream)
    return problems


def _grouping_problems(
    comp: ComponentSpec, where: str, src: ComponentSpec, inp: Input, declared_stream: Stream
) -> list[str]:
    """A subscription's grouping: known kind, declared fields, direct, placement, custom."""
    problems: list[str] = []
    g = inp.grouping
    if g.kind not in _GROUPINGS:
        problems.append(f"{where}: unknown grouping {g.kind!r}")
    missing = [f for f in g.fields if f not in declared_stream.fields]
    if g.kind == "fields" and not g.fields:
        problems.append(f"{where}: fields grouping on {inp.component!r} names no field")
    if missing:
        problems.append(
            f"{where} groups {inp.component!r}.{inp.stream} by undeclared field(s) "
            f"{', '.join(map(repr, missing))}; the stream declares "
            f"{', '.join(map(repr, declared_stream.fields)) or 'no fields'}"
        )
    if g.kind == "direct" and not declared_stream.direct:
        problems.append(
            f"{where} uses direct grouping on {inp.component!r}.{inp.stream}, which is "
            "not declared direct: declare Stream(..., direct=True)"
        )
    problems += _placement_problems(where, comp, src, inp.stream, g.kind)
    if g.kind == "custom" and not isinstance(g.custom, CustomGrouping):
        problems.append(
            f"{where}: custom grouping on {inp.component!r} must provide "
            "prepare(context, component, stream, target_tasks) and choose_tasks(values)"
        )
    return problems


def _cycle_problems(topology: Topology) -> list[str]:
    cycle = _find_cycle(topology)
    if not cycle:
        return []
    return [
        "cycle: " + " -> ".join(repr(c) for c in cycle) + "; a topology must be a DAG: "
        f"remove the input of {cycle[0]!r} from {cycle[-2]!r}"
    ]


def _placement_problems(
    where: str, comp: ComponentSpec, src: ComponentSpec, stream: str, grouping: str
) -> list[str]:
    """Streams flow within an agent's edge subgraph, within the cloud, or edge to cloud."""
    here, there = comp.placement, src.placement
    if here.is_edge and not there.is_edge:
        return [
            f"{where} runs on the edge but subscribes to cloud component {src.name!r}: "
            f"streams flow from the edge to the cloud only; place {src.name!r} with "
            f"edge({dict(here.selector)}) too, or {comp.name!r} in the cloud"
        ]
    if here.is_edge and dict(here.selector) != dict(there.selector):
        return [
            f"{where} (edge {dict(here.selector)}) subscribes to {src.name!r} (edge "
            f"{dict(there.selector)}): an edge subgraph runs whole on each agent, so give "
            "both the same selector"
        ]
    if there.is_edge and not here.is_edge and grouping == "direct":
        return [
            f"{where} uses direct grouping on {src.name!r}.{stream}, which crosses from the "
            "edge to the cloud, where edge tasks cannot name cloud tasks: use fields grouping"
        ]
    return []


def _find_cycle(topology: Topology) -> list[str] | None:
    children: dict[str, list[str]] = {c.name: [] for c in topology.components}
    for c in topology.components:
        for inp in c.inputs:
            if inp.component in children:
                children[inp.component].append(c.name)
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for child in children[node]:
            if state.get(child) == 1:
                return [*path[path.index(child) :], child]
            if child not in state:
                found = visit(child)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for name in children:
        if name not in state:
            found = visit(name)
            if found:
                return found
    return None


def _closest(name: str, candidates: list[str]) -> str | None:
    import difflib

    match = difflib.get_close_matches(name, candidates, n=1)
    return match[0] if match else None
