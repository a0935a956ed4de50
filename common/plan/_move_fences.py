"""Which of a moved component's edge inputs are fenced, and how (issue 37, moves).

A move switches each agent at a barrier of its own; where the moved component keeps keyed
state (it declares ``sites``), or where the cloud also reads its edge input (the input
keeps crossing for the others), the agent says in band where its switch falls: the outbox
sink of that input seals a fence row among its rows (``runtime/_fence.py``). ``fenced``
names each such (moved component, edge input) of a topology, and the wiring follows from it
in every process that derives a subgraph from the file: the cloud receiver of the input
emits the fences to every task of the moved component's cloud copy (and, where the input
is shared, the rows that copy must count on ``MOVE_PREFIX`` streams of their own, which it
reads instead: ``cloud_inputs``), and the agent's outbox sink of the input is told what to
seal (its config ``FENCE_FOR``). A stateless move whose input only it reads in the cloud
needs no fence: the stream a row arrives on says which side of the switch it was read on.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..api import ComponentSpec, Input, Stream, Topology, all_tasks
from ..api._config import HANDOVER, SITES
from ._fence_streams import FENCE_OUT, FENCE_OUT_FIELDS, MOVE_PREFIX


@dataclass(frozen=True)
class Fenced:
    component: str  # the moved one
    source: str  # its edge input, whose rows are fenced
    field: str  # its sites field ("" without one: no state moves)
    to: str  # where it runs now: "edge" or "cloud"
    shared: bool  # the cloud also reads the source: the receiver splits its rows


def fenced(topology: Topology) -> list[Fenced]:
    by_name = {c.name: c for c in topology.components}

    def moved(c: ComponentSpec) -> bool:
        return bool(c.config.get(HANDOVER))

    out: list[Fenced] = []
    for comp in topology.components:
        if not moved(comp):
            continue
        field = comp.config.get(SITES)
        field = field if isinstance(field, str) else ""
        for src_name in dict.fromkeys(i.component for i in comp.inputs):
            src = by_name.get(src_name)
            if src is None or not src.placement.is_edge or moved(src):
                continue
            shared = any(
                not c.placement.is_edge
                and not moved(c)
                and any(i.component == src_name for i in c.inputs)
                for c in topology.components
            )
            if field or shared:
                to = "edge" if comp.placement.is_edge else "cloud"
                out.append(Fenced(comp.name, src_name, field, to, shared))
    return out


def receiver_streams(
    src: ComponentSpec, streams: tuple[Stream, ...], fences: list[Fenced]
) -> tuple[Stream, ...]:
    """A receiver's streams: the crossing ones, the fence, and for a shared input the copies
    the moved component's cloud copy reads (same fields)."""
    mine = [f for f in fences if f.source == src.name]
    if not mine:
        return streams
    out = [*streams, Stream(FENCE_OUT_FIELDS, FENCE_OUT)]
    for f in mine:
        if f.shared:
            out.extend(
                Stream(s.fields, MOVE_PREFIX + s.name) for s in streams if s.name != FENCE_OUT
            )
    return tuple(dict.fromkeys(out))


def cloud_inputs(comp: ComponentSpec, fences: list[Fenced]) -> tuple[Input, ...]:
    """A moved component's inputs in the cloud: the fences of each fenced input, and a
    shared input's rows on its ``MOVE_PREFIX`` streams instead of its own."""
    mine = [f for f in fences if f.component == comp.name]
    shared = {f.source for f in mine if f.shared}
    inputs = [
        Input(i.component, MOVE_PREFIX + i.stream, i.grouping) if i.component in shared else i
        for i in comp.inputs
    ]
    inputs.extend(Input(f.source, FENCE_OUT, all_tasks()) for f in mine)
    return tuple(inputs)


def sink_fence(source: str, fences: list[Fenced]) -> list[str] | None:
    """The ``FENCE_FOR`` config of the outbox sink of ``source``, or None."""
    for f in fences:
        if f.source == source:
            return [f.component, f.field, f.to]
    return None
