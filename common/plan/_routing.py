"""Groupings, applied in the emitting instance: which tasks get each tuple.

The emitter computes destination tasks so that the stmgr routes batches by
header alone. Fields grouping hashes the msgpack bytes of the key values with
CRC-32, so every process (and every Python version) agrees; Python's
``hash()`` is salted per process and would scatter keys.

Pure (no I/O, no threads): the runtime's emitter routes with it, and so does
the in-process test kit (``headwater.testing``).
"""

from __future__ import annotations

import random
import zlib
from collections.abc import Callable, Sequence
from typing import Any

import msgpack

from .._exceptions import EmitError
from ..api import DEAD_LETTERS, Grouping, Stream, Topology
from ._physical import task_ids

Selector = Callable[[list[Any], int | None], Sequence[int]]

_pack = msgpack.Packer(use_bin_type=True, datetime=True).pack


def key_hash(key: Any) -> int:
    """Stable hash of a grouping key (same value in every process)."""
    return zlib.crc32(_pack(key))


def make_selector(
    grouping: Grouping,
    stream: Stream,
    tasks: list[int],
    context: object,
    consumer: str,
    rng: random.Random,
) -> Selector:
    """Build the per-tuple function ``(values, direct_task) -> destination tasks``."""
    tasks = sorted(tasks)
    n = len(tasks)
    kind = grouping.kind
    if kind in ("shuffle", "none"):
        state = [rng.randrange(n)]
        singles = [[t] for t in tasks]

        def shuffle(values: list[Any], direct: int | None) -> Sequence[int]:
            i = state[0] = (state[0] + 1) % n
            return singles[i]

        return shuffle
    if kind == "fields":
        idx = [stream.fields.index(f) for f in grouping.fields]
        singles = [[t] for t in tasks]
        if n == 1:  # one task takes every key: no hash to compute (a key the codec cannot
            only = singles[0]  # carry still fails when its batch is encoded, alone)

            def one_task(values: list[Any], direct: int | None) -> Sequence[int]:
                return only

            return one_task
        if len(idx) == 1:
            (i0,) = idx

            def by_field(values: list[Any], direct: int | None) -> Sequence[int]:
                return singles[zlib.crc32(_pack(values[i0])) % n]

            return by_field

        def by_fields(values: list[Any], direct: int | None) -> Sequence[int]:
            return singles[zlib.crc32(_pack([values[i] for i in idx])) % n]

        return by_fields
    if kind == "all":
        return lambda values, direct: tasks
    if kind == "global":
        lowest = [tasks[0]]
        return lambda values, direct: lowest
    if kind == "direct":
        allowed = frozenset(tasks)

        def direct_sel(values: list[Any], direct: int | None) -> Sequence[int]:
            if direct is None:
                return ()  # a plain emit on a direct stream reaches no direct consumer
            if direct not in allowed:
                raise EmitError(
                    f"direct_task {direct} is not a task of {consumer!r} (its tasks: {tasks})"
                )
            return (direct,)

        return direct_sel
    if kind == "custom":
        custom = grouping.custom
        assert custom is not None
        custom.prepare(context, consumer, stream.name, list(tasks))
        allowed = frozenset(tasks)

        def custom_sel(values: list[Any], direct: int | None) -> Sequence[int]:
            chosen = custom.choose_tasks(values)
            bad = [t for t in chosen if t not in allowed]
            if bad:
                raise EmitError(
                    f"custom grouping {type(custom).__qualname__} chose {bad}, which are not "
                    f"tasks of {consumer!r} (its tasks: {tasks})"
                )
            return chosen

        return custom_sel
    raise EmitError(f"unknown grouping {kind!r}")


def fixed_tasks(grouping: Grouping, tasks: list[int]) -> list[int] | None:
    """What ``make_selector``'s selector returns for every tuple, when that is always the
    same tasks (one task, ``global``, ``all``), else None."""
    tasks = sorted(tasks)
    kind = grouping.kind
    if kind == "all":
        return tasks
    if kind == "global" or (kind in ("shuffle", "none", "fields") and len(tasks) == 1):
        return tasks[:1]
    return None


def _by_one_field(
    grouping: Grouping, stream: Stream, tasks: list[int]
) -> tuple[int, list[int]] | None:
    if grouping.kind != "fields" or len(grouping.fields) != 1 or len(tasks) < 2:
        return None
    return stream.fields.index(grouping.fields[0]), sorted(tasks)


class Router:
    """For one emitting component: stream name -> selectors of every subscriber."""

    def __init__(
        self,
        topology: Topology,
        component: str,
        context: object,
        seed: int,
        ids: dict[str, list[int]] | None = None,
    ) -> None:
        rng = random.Random(seed)
        ids = ids if ids is not None else task_ids(topology)
        spec = topology.component(component)
        self.streams = {s.name: s for s in spec.streams}
        self._selectors: dict[str, list[Selector]] = {name: [] for name in self.streams}
        # per stream: the tasks every tuple goes to when no selector looks at the tuple
        # ([]: no subscriber), None when some selector does
        self._fixed: dict[str, list[int] | None] = {name: [] for name in self.streams}
        fields: dict[str, list[tuple[int, list[int]] | None]] = {n: [] for n in self.streams}
        for consumer in topology.components:
            for inp in consumer.inputs:
                if inp.component == component and inp.stream in self.streams:
                    fixed, tasks = self._fixed[inp.stream], ids[consumer.name]
                    alike = fixed_tasks(inp.grouping, tasks)
                    both = None if fixed is None or alike is None else fixed + alike
                    # a task subscribed twice takes each tuple twice in a row, which slices
                    # of records would interleave: that stream goes one tuple at a time
                    self._fixed[inp.stream] = (
                        both if both is None or len(set(both)) == len(both) else None
                    )
                    stream = self.streams[inp.stream]
                    fields[inp.stream].append(_by_one_field(inp.grouping, stream, tasks))
                    self._selectors[inp.stream].append(
                        make_selector(inp.grouping, stream, tasks, context, consumer.name, rng)
                    )
        # per stream: (the key's field, the tasks) where one subscriber groups by one field
        self._by_field = {n: f[0] if len(f) == 1 else None for n, f in fields.items()}

    def by_field(self, stream: str) -> tuple[int, list[int]] | None:
        """``(i, tasks)`` when the stream's one subscriber groups by the field at index ``i``
        over several ``tasks`` (sorted): a tuple goes to ``tasks[key_hash(values[i]) %
        len(tasks)]``, as its selector says; else None."""
        return self._by_field.get(stream)

    def fixed(self, stream: str) -> list[int] | None:
        """The tasks every tuple on ``stream`` goes to, when that never depends on the tuple
        (what the selectors return, in order, for any values; ``[]`` when nothing
        subscribes), else None. Raises ``EmitError`` for an undeclared stream."""
        if stream not in self._fixed:
            self.selectors(stream)  # the same error as emitting on it
        return self._fixed[stream]

    def selectors(self, stream: str) -> list[Selector]:
        try:
            return self._selectors[stream]
        except KeyError:
            declared = ", ".join(repr(s) for s in self.streams if s != DEAD_LETTERS) or "none"
            raise EmitError(
                f"emit on undeclared stream {stream!r} (declared: {declared}); "
                "declare it in the component's outputs"
            ) from None
