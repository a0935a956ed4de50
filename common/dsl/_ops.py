"""The DSL's steps at run time: the ``Op`` base and the stateless per-record steps.

The keyed steps are in ``_keyed_ops.py``, the windowed ones (``window``,
``join``) in ``_window_ops.py``, the fused components that run chains of
steps in ``_fused.py``.

Every record is a ``(key, value)`` pair (key None until ``key_by``). A chain
of steps with no repartition between them runs inside one instance: each
step hands its output straight to the next as a function call, with no
serialisation and no stream manager hop. Stateful steps keep their state
under their step name (``ctx.keyed_state(name)`` per key, ``ctx.state[name]``
for the rest), so checkpoints and restores need nothing else.

A step whose function raises on a record retries that step on that record
(``Context.retry_record``: ``topology.record.max.retries`` times), then sends
the record to the dead letters under the step's name, and the chain goes on
with the next record; the steps before it are not run again. Each step's
closure holds its own ``try``, which costs nothing until something raises (the
retry is a ``partial``: a lambda over the closure's arguments would make them
cells, paid on every record).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from .._exceptions import DeadLetter
from ..api import Context
from ._partition import partition_of

Out = Callable[[Any, Any], None]
Side = Callable[[str, Any, Any], None]
Retry = Callable[[str, Callable[[], Any], Exception, Any], bool]


def _reraise(component: str, attempt: Callable[[], Any], error: Exception, record: Any) -> bool:
    raise error  # a context that cannot retry (a test's): the exception goes on up


class Op:
    """One step. ``process`` gets a record and calls ``out`` for each result."""

    def __init__(self, name: str) -> None:
        self.name = name

    def open(self, ctx: Context) -> None:
        self.ctx = ctx

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        raise NotImplementedError

    @property
    def retry(self) -> Retry:
        """Retries a record this step raised on, then dead-letters it (``retry_record``)."""
        return getattr(self.ctx, "retry_record", _reraise)  # a user's bare test context

    def link(self, out: Out, side: Side) -> Out:
        """``process`` bound to what follows it in a chain: one call per record per step.

        A class that defines ``inline(out, side)`` beside its ``process`` gives a
        closure doing the same work inline, which saves a call and the attribute
        lookups on every record; a subclass that overrides ``process`` alone gets
        the generic call, so its ``process`` is never bypassed. Either way a record
        the step raises on goes to ``retry``.
        """
        owner = next(c for c in type(self).__mro__ if "process" in vars(c))
        inline = vars(owner).get("inline")
        if inline is not None:
            return inline(self, out, side)  # type: ignore[no-any-return]
        process, retry, name = self.process, self.retry, self.name

        def call(key: Any, value: Any) -> None:
            try:
                process(key, value, out, side)
            except Exception as exc:
                retry(name, partial(process, key, value, out, side), exc, value)

        return call

    def on_watermark(self, watermark: int, out: Out, side: Side) -> None:
        """Every task feeding this step has sent everything up to ``watermark``."""

    def on_time(self, out: Out, side: Side) -> None:
        """Called every tick (processing-time steps use it)."""


class MapOp(Op):
    def __init__(self, name: str, fn: Callable[[Any], Any]) -> None:
        super().__init__(name)
        self.fn = fn

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        out(key, self.fn(value))

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            out(key, fn(value))

        def call(key: Any, value: Any) -> None:
            try:
                out(key, fn(value))
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


class FlatMapOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        for v in list(self.fn(value)):
            out(key, v)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            for v in list(fn(value)):
                out(key, v)

        def call(key: Any, value: Any) -> None:
            try:
                # all or nothing: a generator that raises half way has emitted none of it
                for v in list(fn(value)):
                    out(key, v)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


class FilterOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        if self.fn(value):
            out(key, value)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            if fn(value):
                out(key, value)

        def call(key: Any, value: Any) -> None:
            try:
                if fn(value):
                    out(key, value)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


class KeyByOp(MapOp):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        out(self.fn(value), value)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name = self.fn, self.retry, self.name

        def again(key: Any, value: Any) -> None:
            out(fn(value), value)

        def call(key: Any, value: Any) -> None:
            try:
                out(fn(value), value)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)

        return call


_KEPT = frozenset({str, bytes, int, bool, type(None)})
"""Key classes whose equal values have equal msgpack bytes (floats: 0.0 and -0.0 do not)."""


class PartitionedKeyByOp(KeyByOp):
    """``key_by(..., partitioned=True)``: sets the key and checks that it belongs here.

    A key that ``partition_of`` gives to another task of this component goes to
    the dead letters with the reason (never into this task's state, where it
    would be counted apart from its key's other records). The answer for a key
    of this task is kept with the key's class, so the check is one dict lookup
    per record; only for classes whose equal values pack to the same bytes
    (``_KEPT``): Python takes 2 and 2.0, 1 and True, 0.0 and -0.0, (1, "a") and
    (1.0, "a") for one dict key, which the fields grouping routes apart.
    """

    MAX_KEYS = 1 << 16  # keys whose answer is kept (forgotten all at once past it)

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.tasks = len(ctx.component_tasks(ctx.component))
        self.index = ctx.component_index
        self.mine: dict[Any, bool] = {}

    def check(self, key: Any) -> None:
        """Raise ``DeadLetter`` if ``key`` is another task's."""
        cls = key.__class__
        ok = self.mine.get(key)  # (an unhashable key raises: dead-lettered, as keyed state would)
        if ok is cls:
            return
        ok = partition_of(key, self.tasks) == self.index
        if cls in _KEPT:
            if len(self.mine) >= self.MAX_KEYS:
                self.mine.clear()
            self.mine[key] = cls if ok else False
        if not ok:
            raise DeadLetter(
                f"key {key!r} belongs to partition {partition_of(key, self.tasks)} of "
                f"{self.tasks}, not to task {self.index} of {self.name!r} (partitioned=True: "
                "split the input with headwater.dsl.partition_of)"
            )

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        k = self.fn(value)
        self.check(k)
        out(k, value)

    def inline(self, out: Out, side: Side) -> Out:
        fn, retry, name, mine, check = self.fn, self.retry, self.name, self.mine, self.check

        def again(key: Any, value: Any) -> None:
            k = fn(value)
            check(k)
            out(k, value)

        def call(key: Any, value: Any) -> None:
            try:
                k = fn(value)
                if mine.get(k) is not k.__class__:
                    check(k)
            except Exception as exc:
                retry(name, partial(again, key, value), exc, value)
                return
            out(k, value)

        return call


class SinkOp(MapOp):
    """Calls ``fn`` with each value; counts them (user metric ``records:<step>``)."""

    def open(self, ctx: Context) -> None:
        super().open(ctx)
        self.counter = f"records:{self.name}"

    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.fn(value)
        self.ctx.incr(self.counter)

    def inline(self, out: Out, side: Side) -> Out:
        fn, incr, counter = self.fn, self.ctx.incr, self.counter
        retry, name = self.retry, self.name

        def again(value: Any) -> None:
            fn(value)
            incr(counter)

        def call(key: Any, value: Any) -> None:  # nothing follows a sink
            try:
                fn(value)
            except Exception as exc:
                retry(name, partial(again, value), exc, value)
                return
            incr(counter)

        return call


class LogOp(Op):
    def process(self, key: Any, value: Any, out: Out, side: Side) -> None:
        self.ctx.log.info("%s: %r", self.name, value if key is None else (key, value))
        out(key, value)


OpFactory = Callable[[], Op]
