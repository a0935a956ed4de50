"""A pipeline's streams: ``Streamlet`` (every method adds a named step) and its windowed form.

``Pipeline`` (``_pipeline.py``) makes the first streamlets (its sources and
unions); each ``Streamlet`` method adds a step behind its own and returns the
stream of that step's output. A streamlet reaches its pipeline only through
``Steps``: the pipeline's name and its ``_add``, which checks the step's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from functools import partial
from typing import Any, Protocol

from .._exceptions import HeadwaterError, InvalidTopologyError
from ..api import Bolt, Placement
from ..models._score_spec import SCORE_CONFIG
from ._build import _Step
from ._keyed_ops import KeyedFlatMapOp, ReduceByKeyOp
from ._ops import (
    FilterOp,
    FlatMapOp,
    KeyByOp,
    LogOp,
    MapOp,
    Op,
    PartitionedKeyByOp,
    SinkOp,
)
from ._score import ScoreOp, spec_of
from ._window_ops import JoinOp, KeyClockWindowOp, WindowOp
from ._windows import Assigner, Session, Tumbling, fold_first


class Steps(Protocol):
    """What a streamlet needs of its pipeline: its name (for errors) and adding a step."""

    name: str

    def _add(self, step: _Step) -> _Step: ...


def identity(value: Any) -> Any:
    return value


class Streamlet:
    """A stream of ``(key, value)`` records in a pipeline; every method adds a named step."""

    def __init__(self, pipeline: Steps, step: _Step, tag: str = "default") -> None:
        self.pipeline, self.step, self.tag = pipeline, step, tag

    def _then(self, name: str, op: Callable[[], Op], **kw: Any) -> Streamlet:
        step = _Step(
            name,
            op,
            parents=[(self.step, self.tag)],
            parallelism=kw.pop("parallelism", None) or self.step.parallelism,
            placement=kw.pop("placement", None) or self.step.placement,
            **kw,
        )
        return Streamlet(self.pipeline, self.pipeline._add(step))

    def map(self, name: str, fn: Callable[[Any], Any], **kw: Any) -> Streamlet:
        return self._then(name, partial(MapOp, name, fn), **kw)

    def flat_map(self, name: str, fn: Callable[[Any], Iterable[Any]], **kw: Any) -> Streamlet:
        return self._then(name, partial(FlatMapOp, name, fn), **kw)

    def filter(self, name: str, fn: Callable[[Any], bool], **kw: Any) -> Streamlet:
        return self._then(name, partial(FilterOp, name, fn), **kw)

    def key_by(
        self, name: str, fn: Callable[[Any], Any], *, partitioned: bool = False, **kw: Any
    ) -> Streamlet:
        """Set each record's key; the next stateful step sees each key on one task.

        ``partitioned=True`` says the records already sit on their key's task: task
        ``i`` of this step's ``n`` gets only keys with ``partition_of(key, n) == i``
        (a source reading key-partitioned input, as Flink's
        ``reinterpretAsKeyedStream``). The keyed steps after it, event-time windows
        included, then run in the same chain: no exchange, no encoding per record.
        A record whose key belongs to another task goes to the dead letters with
        the reason, never into another task's state.
        """
        op = partial(PartitionedKeyByOp if partitioned else KeyByOp, name, fn)
        return self._then(name, op, rekeys=True, partitioned=partitioned, key_fn=fn, **kw)

    def flat_map_by_key(
        self, name: str, fn: Callable[[Any, Any], tuple[Any, Iterable[Any]]], **kw: Any
    ) -> Streamlet:
        """A stateful step per key: ``fn(state, value) -> (new_state, values_out)``.

        ``state`` is None for a key's first record; returning None forgets it.
        Consecutive keyed steps on the same key run fused.
        """
        return self._then(name, partial(KeyedFlatMapOp, name, fn), keyed=True, **kw)

    def reduce_by_key(self, name: str, fn: Callable[[Any, Any], Any], **kw: Any) -> Streamlet:
        """A running total per key: emits the key's new total for every record."""
        return self._then(name, partial(ReduceByKeyOp, name, fn), keyed=True, **kw)

    def window(
        self,
        name: str,
        assigner: Assigner,
        *,
        timestamp: Callable[[Any], int] | None,
        out_of_orderness: int = 0,
        lateness: int = 0,
        parallelism: int | None = None,
        placement: Placement | None = None,
        clock: str = "task",
    ) -> WindowedStreamlet:
        """Windows per key (see ``headwater.common.dsl._windows``): in event time, or in
        processing time (the clock of the task) with ``timestamp=None``; ``placement``
        (default: this stream's) places the window step and the steps after it.

        ``clock="task"`` (the default): windows close by the task's watermark, the
        highest event time of any key (less ``out_of_orderness``). ``clock="key"``
        (event-time tumbling windows): each key's windows close by that key's own
        clock, on its first record of another window, so a key lagging the others
        loses nothing to lateness (no watermark, no ``late()``).
        """
        problems = []
        if clock not in ("task", "key"):
            problems.append(f"clock={clock!r}; use 'task' or 'key'")
        elif clock == "key":
            if timestamp is None:
                problems.append("clock='key' needs event time: a timestamp function")
            if type(assigner) is not Tumbling:
                problems.append(f"clock='key' takes Tumbling windows, not {assigner!r}")
            if out_of_orderness or lateness:
                problems.append(
                    "clock='key' has no watermark: out_of_orderness and lateness do not apply"
                )
        if problems:
            raise InvalidTopologyError(
                self.pipeline.name, [f"window {name!r}: {p}" for p in problems]
            )
        return WindowedStreamlet(
            self,
            name,
            assigner,
            timestamp,
            out_of_orderness,
            lateness,
            parallelism,
            clock=clock,
            placement=placement,
        )

    def join(
        self,
        name: str,
        other: Streamlet,
        assigner: Assigner,
        fn: Callable[[Any, Any], Any],
        *,
        timestamp: Callable[[Any], int] | tuple[Callable[[Any], int], Callable[[Any], int]] | None,
        how: str = "inner",
        out_of_orderness: int = 0,
        lateness: int = 0,
        parallelism: int | None = None,
        with_window: bool = False,
    ) -> Streamlet:
        """Join this keyed stream with ``other`` per key within event-time windows.

        ``how``: ``inner``, ``left`` (``fn(left, None)`` for a left record with no
        match in its window), ``right`` (``fn(None, right)``) or ``outer`` (both).
        ``timestamp`` is one function for both sides, a (left, right) pair, or None
        for processing time.
        ``with_window`` emits ``{"key", "start", "end", "value"}`` instead.
        """
        if how not in ("inner", "left", "right", "outer"):
            raise InvalidTopologyError(
                self.pipeline.name,
                [f"join {name!r}: how={how!r}; use 'inner', 'left', 'right' or 'outer'"],
            )
        stamps = (
            None
            if timestamp is None
            else timestamp
            if isinstance(timestamp, tuple)
            else (timestamp, timestamp)
        )
        op = partial(
            JoinOp, name, assigner, stamps, fn, how, out_of_orderness, lateness, with_window
        )
        step = _Step(
            name,
            op,
            parents=[(self.step, self.tag), (other.step, other.tag)],
            parallelism=parallelism or self.step.parallelism,
            placement=self.step.placement,
            keyed=True,
            exchange=True,
            side_tags=("late",),
            join=True,
            timestamps=stamps or (),
            clock=stamps is None,
        )
        return Streamlet(self.pipeline, self.pipeline._add(step))

    def repartition(
        self, name: str, parallelism: int, partitioner: Callable[[Any, int], Any] | None = None
    ) -> Streamlet:
        """Spread the records evenly over ``parallelism`` tasks of the next steps, or where
        ``partitioner(value, parallelism)`` says (a partition index, or several)."""
        return self._then(
            name,
            partial(MapOp, name, identity),
            parallelism=parallelism,
            exchange=True,
            partitioner=partitioner,
        )

    def apply(self, name: str, op: Callable[[], Op], **kw: Any) -> Streamlet:
        """A step of your own: ``op()`` makes an ``Op`` (``headwater.dsl.Op``; a keyed one
        that opens something first may extend ``headwater.dsl.KeyedFlatMapOp``)."""
        return self._then(name, op, **kw)

    def score(
        self,
        name: str,
        model: str,
        *,
        inputs: Sequence[str | int] | Callable[[Any], Sequence[float]],
        output: str | Callable[[Any, Any, str], Any] = "score",
        take: str | None = None,
        version_field: str | None = "model_version",
        width: int | None = None,
        placement: Placement | None = None,
        parallelism: int | None = None,
    ) -> Streamlet:
        """Score each record with the ONNX model named ``model`` that a rollout ships
        (``headwater.common.dsl._score``): ``inputs`` are a dict record's keys, a list
        record's indexes, or a function of the record giving ``width`` numbers; a dict
        gets its score under ``output`` and the model version under ``version_field``, a
        list both appended; ``output`` may be a function ``(value, score, version)``.
        ``take`` names the model output (None: its first). A frame is one model run."""
        try:
            spec = spec_of(model, inputs, output, take, width)
            if version_field is not None and not isinstance(version_field, str):
                raise HeadwaterError(f"score: version_field is a field name, not {version_field!r}")
            if version_field is not None and version_field == output:
                raise HeadwaterError(
                    f"score: output and version_field are both {output!r}: the version would "
                    "overwrite the score"
                )
        except HeadwaterError as exc:
            raise InvalidTopologyError(self.pipeline.name, [f"step {name!r}: {exc}"]) from None
        op = partial(ScoreOp, name, spec, inputs, output, version_field)
        config = {SCORE_CONFIG: spec.doc()}
        return self._then(
            name, op, exchange=True, config=config, placement=placement, parallelism=parallelism
        )

    def log(self, name: str) -> Streamlet:
        """Log every record (and pass it on)."""
        return self._then(name, partial(LogOp, name))

    def sink(self, name: str, fn: Callable[[Any], None], **kw: Any) -> None:
        """Call ``fn`` with every record's value."""
        self._then(name, partial(SinkOp, name, fn), **kw)

    def to(
        self,
        name: str,
        bolt: Callable[[], Bolt],
        *,
        parallelism: int | None = None,
        key: bool = False,
    ) -> None:
        """Feed a component (e.g. ``TransactionalFileSink``): tuples ``[key, value]``."""
        step = _Step(
            name,
            None,
            parents=[(self.step, self.tag)],
            parallelism=parallelism or self.step.parallelism,
            placement=self.step.placement,
            keyed=key,
            component=bolt,
        )
        self.pipeline._add(step)

    def late(self) -> Streamlet:
        """A window step's side output: ``(key, value)`` of the records too late to count."""
        if "late" not in self.step.side_tags:
            raise InvalidTopologyError(
                self.pipeline.name,
                [f"step {self.step.name!r} has no late records: late() follows a windowed reduce"],
            )
        return Streamlet(self.pipeline, self.step, "late")


class WindowedStreamlet:
    """``stream.window(...)``: say how each window's records combine."""

    def __init__(
        self,
        stream: Streamlet,
        name: str,
        assigner: Assigner,
        timestamp: Callable[[Any], int] | None,
        out_of_orderness: int,
        lateness: int,
        parallelism: int | None,
        *,
        clock: str = "task",
        placement: Placement | None = None,
    ) -> None:
        self.stream, self.name, self.assigner = stream, name, assigner
        self.timestamp, self.ooo, self.lateness = timestamp, out_of_orderness, lateness
        self.parallelism, self.per_key, self.placement = parallelism, clock == "key", placement

    def reduce(self, name: str, fn: Callable[[Any, Any], Any]) -> Streamlet:
        """Combine a window's records with ``fn``; emits ``{"key", "start", "end", "value"}``.

        ``name`` names the result stream; the window step itself is ``window``'s name.
        """
        if self.per_key:
            return self._per_key(name, fn, None)
        return self._windowed(
            name,
            partial(
                WindowOp, self.name, self.assigner, self.timestamp, fn, self.ooo, self.lateness
            ),
        )

    def aggregate(
        self,
        name: str,
        zero: Callable[[], Any],
        add: Callable[[Any, Any], Any],
        merge: Callable[[Any, Any], Any] | None = None,
    ) -> Streamlet:
        """Fold a window's records into an accumulator: ``add(acc, record)`` from ``zero()``.

        Session windows also need ``merge(acc, acc)`` when two sessions join.
        """
        if isinstance(self.assigner, Session) and merge is None:
            raise InvalidTopologyError(
                self.stream.pipeline.name,
                [f"aggregate {name!r} over session windows needs merge(acc, acc)"],
            )
        if self.per_key:
            return self._per_key(name, add, partial(fold_first, zero, add))
        op = partial(
            WindowOp,
            self.name,
            self.assigner,
            self.timestamp,
            add,
            self.ooo,
            self.lateness,
            partial(fold_first, zero, add),
            merge,
        )
        return self._windowed(name, op)

    def _per_key(
        self, name: str, fn: Callable[[Any, Any], Any], first: Callable[[Any], Any] | None
    ) -> Streamlet:
        """``clock="key"``: a keyed step like ``flat_map_by_key`` (no watermark to send it,
        no ticks, no late records), fused behind keyed steps on the same key."""
        assert isinstance(self.assigner, Tumbling) and self.timestamp is not None
        op = partial(KeyClockWindowOp, self.name, self.assigner, self.timestamp, fn, first)
        windowed = self.stream._then(
            self.name, op, keyed=True, parallelism=self.parallelism, placement=self.placement
        )
        return windowed.map(name, identity)

    def _windowed(self, name: str, op: Callable[[], Op]) -> Streamlet:
        windowed = self.stream._then(
            self.name,
            op,
            keyed=True,
            side_tags=("late",),
            parallelism=self.parallelism,
            placement=self.placement,
            timestamps=() if self.timestamp is None else (self.timestamp,),
            clock=self.timestamp is None,
        )
        result = windowed.map(name, identity)
        result.step.side_tags = ()
        return _Result(windowed, result)


class _Result(Streamlet):
    """The stream of fired windows; ``late()`` reaches the window step's side output."""

    def __init__(self, windowed: Streamlet, result: Streamlet) -> None:
        super().__init__(result.pipeline, result.step, result.tag)
        self._windowed = windowed

    def late(self) -> Streamlet:
        return self._windowed.late()
