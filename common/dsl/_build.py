"""Compiling a pipeline's steps into a topology: which steps fuse into one component.

Steps fuse into one component (one instance per task, no serialisation
between them) unless something needs an exchange: a stateful step keyed by
``key_by`` (records must meet their key's task), ``repartition``, a
``union``, a stream read by more than one step (``clone``), or a change of
placement or parallelism.

A keyed step stays in its parent's chain when the records there already sit
on their key's task: the chain starts with a keyed step and no step after it
changes the key, or a ``key_by(..., partitioned=True)`` in the chain said so
(the source splits its input with ``partition_of``, as the fields grouping
would; the step checks every key; not a processing-time step, whose ticks reach
a component's first step only). A windowed step in event time fuses only
this second way and only in a source's chain: its watermark is then its own
task's (the records it sees, and the end of time once a bounded source is
done), where otherwise it takes the lowest of every upstream task's over
``wm:<step>`` streams.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from .._exceptions import InvalidTopologyError
from ..api import (
    Bolt,
    Grouping,
    Input,
    Placement,
    Spout,
    Stream,
    Topology,
    all_tasks,
    custom,
    fields,
    shuffle,
)
from ..api._config import DSL_STEPS as STEPS
from ..api._config import TOPOLOGY_TICK_TUPLE_FREQ_SECS as TICK_SECS
from ._fused import FusedBolt
from ._fused_source import FusedSpout
from ._ops import Op
from ._partition import partition_of

RECORD = ("key", "value")
DeadLetters = tuple[str, Callable[[], Bolt], int, Placement | None]


@dataclass(eq=False)
class _Step:
    name: str
    op: Callable[[], Op] | None  # None: a source or a plain component
    parents: list[tuple[_Step, str]] = field(default_factory=list)  # (step, output tag)
    parallelism: int = 1
    placement: Placement = field(default_factory=Placement)
    keyed: bool = False  # needs its input grouped by key
    exchange: bool = False  # starts a new component whatever else holds
    source: Callable[[], Spout] | None = None
    component: Callable[[], Bolt] | None = None  # a plain bolt fed [key, value]
    side_tags: tuple[str, ...] = ()
    join: bool = False  # parents[0] is the left input, parents[1] the right
    timestamps: tuple[Callable[[Any], int], ...] = ()  # event time, per parent (windowed steps)
    rekeys: bool = False  # key_by: records leave with a new key
    partitioned: bool = False  # key_by(partitioned=True): records already on their key's task
    key_fn: Callable[[Any], Any] | None = None  # key_by's function
    clock: bool = False  # processing time: needs ticks
    partitioner: Callable[[Any, int], Any] | None = None  # repartition by a function
    config: dict[str, Any] = field(default_factory=dict)  # its component's (a scoring step's)


def build(
    name: str,
    config: dict[str, Any],
    fuse_steps: bool,
    steps: list[_Step],
    dead_letters: DeadLetters | None,
) -> Topology:
    """The topology: chains of fusable steps become one component each."""
    consumers: dict[tuple[str, str], int] = {}
    for s in steps:
        for p, tag in s.parents:
            consumers[(p.name, tag)] = consumers.get((p.name, tag), 0) + 1
    head: dict[str, _Step] = {}  # step -> the first step of its component
    chains: dict[str, list[_Step]] = {}
    for s in steps:  # steps are added after their parents, so this is a topological order
        parent: _Step | None = s.parents[0][0] if len(s.parents) == 1 else None
        fuse = (
            fuse_steps
            and parent is not None
            and s.op is not None
            and s.component is None
            and s.parents[0][1] == "default"
            and consumers[(parent.name, "default")] == 1
            and (not s.keyed or _on_key_task(chains[head[parent.name].name], s))
            and not s.exchange
            and parent.component is None
            and s.parallelism == parent.parallelism
            and s.placement == parent.placement
        )
        if fuse and parent is not None:
            head[s.name] = head[parent.name]
            chains[head[s.name].name].append(s)
        else:
            head[s.name] = s
            chains[s.name] = [s]
    # windowed steps heading a component take watermarks from every task of the components
    # that feed them; one fused in its source's chain keeps its own task's
    taps: dict[str, list[tuple[Callable[[Any], int] | None, str]]] = {}
    wm_inputs: dict[str, list[str]] = {}
    for s in steps:
        if head[s.name] is not s:
            continue
        for (parent, tag), stamp in zip(s.parents, s.timestamps, strict=False):
            if tag == "default":
                taps.setdefault(head[parent.name].name, []).append((stamp, f"wm:{s.name}"))
                wm_inputs.setdefault(s.name, []).append(head[parent.name].name)
    _end_of_input_paths(chains, head, taps, wm_inputs)
    topology = Topology(name, config=config)
    for chain_name, chain in chains.items():
        topology = _add_chain(topology, chain_name, chain, head, taps, wm_inputs)
    if dead_letters is not None:
        dl_name, sink, parallelism, placement = dead_letters
        topology = topology.with_dead_letters(
            dl_name, sink, parallelism=parallelism, placement=placement
        )
    return topology


def _end_of_input_paths(
    chains: dict[str, list[_Step]],
    head: dict[str, _Step],
    taps: dict[str, list[tuple[Callable[[Any], int] | None, str]]],
    wm_inputs: dict[str, list[str]],
) -> None:
    """Let the end of a bounded input reach every windowed step, through any number of
    hops. A chain that feeds a window sends it the end of time once every task feeding it
    has sent theirs; a chain without watermarks of its own (a stateless step an exchange
    away from its source) would never learn of it, and the window's last panes stayed open.
    Such a chain takes an end-only tap (no timestamp: nothing but the end of time travels
    on it) from each chain that feeds it, and so on up to the sources."""
    pending = [c for c in taps if c not in wm_inputs]
    while pending:
        name = pending.pop()
        first = chains[name][0]
        if first.source is not None or first.component is not None or name in wm_inputs:
            continue  # a source ends by itself; a user's component sends no watermarks
        for parent, tag in first.parents:
            if tag != "default":
                continue
            feeder = head[parent.name].name
            taps.setdefault(feeder, []).append((None, f"wm:{name}"))
            wm_inputs.setdefault(name, []).append(feeder)
            if feeder not in wm_inputs:
                pending.append(feeder)


def _add_chain(
    topology: Topology,
    name: str,
    chain: list[_Step],
    head: dict[str, _Step],
    taps: dict[str, list[tuple[Callable[[Any], int] | None, str]]],
    wm_inputs: dict[str, list[str]],
) -> Topology:
    first = chain[0]
    ops = [s.op for s in chain if s.op is not None]
    outputs = [Stream(RECORD)] + [
        Stream(RECORD, name=f"{s.name}.{tag}") for s in chain for tag in s.side_tags
    ]
    my_taps = taps.get(name, [])
    outputs += [Stream(RECORD, name=stream) for _, stream in my_taps]
    config: dict[str, Any] = {STEPS: tuple(s.name for s in chain)}
    for s in chain:
        config.update(s.config)
    if (my_taps or first.clock) and first.source is None:
        config[TICK_SECS] = 0.1  # watermarks leave, and clocks move, without records
    if first.source is not None:
        own_time = tuple(s.name for s in chain[1:] if s.timestamps)
        return topology.add_spout(
            name,
            partial(FusedSpout, first.source, partial(_make_ops, ops), my_taps, own_time),
            parallelism=first.parallelism,
            outputs=outputs,
            config=config,
            placement=first.placement,
        )
    grouping: Grouping = (
        custom(_PartitionGrouping(first.partitioner))
        if first.partitioner is not None
        # a partitioned key_by an exchange away (fuse=False, another parallelism): routed by
        # its key as it declares, so every record meets its key's task
        else custom(_PartitionGrouping(partial(_key_partition, first.key_fn)))
        if first.partitioned and first.key_fn is not None
        else fields("key")
        if first.keyed
        else shuffle()
    )
    inputs = [
        Input(head[p.name].name, "default" if tag == "default" else f"{p.name}.{tag}", grouping)
        for p, tag in first.parents
    ]
    wm = [Input(h, f"wm:{first.name}", all_tasks()) for h in wm_inputs.get(name, [])]
    sides = None
    if first.join:
        sides = {(i.component, i.stream): n for n, i in enumerate(inputs)}
        if len(sides) != 2:
            raise InvalidTopologyError(
                topology.name,
                [
                    f"join {first.name!r} reads the same stream on both sides: clone it "
                    "into two steps first"
                ],
            )
    factory: Callable[[], Spout | Bolt] = (
        first.component
        if first.component is not None
        else partial(FusedBolt, partial(_make_ops, ops), sides, my_taps)
    )
    return topology.add_bolt(
        name,
        factory,
        inputs=[*inputs, *wm],
        parallelism=first.parallelism,
        outputs=outputs if first.component is None else (),
        config=config,
        placement=first.placement,
    )


def _on_key_task(chain: list[_Step], step: _Step) -> bool:
    """Whether keyed ``step`` may run in ``chain``: its records are on their key's task."""
    if not step.timestamps and _partitioned_by_key(chain):
        return True
    # declared so: not in processing time (its ticks reach a component's first step only);
    # in event time only at a source, whose task's own records then make its watermark
    return (
        not step.clock
        and _declared_partitioned(chain)
        and (not step.timestamps or chain[0].source is not None)
    )


def _partitioned_by_key(chain: list[_Step]) -> bool:
    """Records in this chain are on their key's task: it starts with a keyed step and no
    step after it changes the key (a keyed step may then run in the same chain)."""
    return chain[0].keyed and not any(s.rekeys for s in chain[1:])


def _declared_partitioned(chain: list[_Step]) -> bool:
    """The chain's last key_by said its records sit on their key's task (and checks it)."""
    last = [s for s in chain if s.rekeys]
    return bool(last) and last[-1].partitioned


class _PartitionGrouping:
    """Routes each record to the partitions ``fn(value, n)`` names (modulo n)."""

    def __init__(self, fn: Callable[[Any, int], Any]) -> None:
        self.fn = fn
        self.targets: list[int] = []

    def prepare(
        self, context: object, component: str, stream: str, target_tasks: list[int]
    ) -> None:
        self.targets = list(target_tasks)

    def choose_tasks(self, values: list[Any]) -> list[int]:
        chosen = self.fn(values[1], len(self.targets))
        picks = chosen if isinstance(chosen, Iterable) else [chosen]
        return [self.targets[int(i) % len(self.targets)] for i in picks]


def _key_partition(key_fn: Callable[[Any], Any], value: Any, n: int) -> int:
    return partition_of(key_fn(value), n)


def _make_ops(factories: Sequence[Callable[[], Op]]) -> list[Op]:
    return [f() for f in factories]
