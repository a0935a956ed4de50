"""The component contract: what the runtime calls on spouts and bolts, and when.

Lifecycle, per instance process (one task of one component):

1. The runtime constructs the component with no arguments (the class, or
   the factory given to ``Topology.add_*``).
2. ``open(ctx)`` once, on the executor thread, before any other call.
3. Spouts: ``next_tuple()`` repeatedly while the spout is active, below its
   max-pending limit and not throttled by backpressure. It should emit a few
   tuples (or none) and return quickly; it must not block for long, because
   acks, fails and ticks are delivered between calls on the same thread.
   ``on_ack(tup_id)``/``on_fail(tup_id)`` report the fate of tuples emitted
   with a ``tup_id`` under at-least-once.
4. Bolts: ``process(tup)`` for every input tuple, ``on_tick(tup)`` every
   tick interval when ``topology.tick.tuple.freq.secs`` is set.
5. Exactly-once topologies only: ``on_restore(checkpoint_id)`` once after
   ``open`` (0 on a clean start) with ``ctx.state`` already restored;
   ``on_checkpoint(checkpoint_id)`` just before each snapshot (after every
   input's barrier, with no tuple in between); ``on_commit(checkpoint_id)``
   when that checkpoint is complete everywhere (transactional sinks publish
   here). A component with heronpy's ``StatefulComponent`` gets
   ``init_state(state)`` before ``open`` and ``pre_save(id)`` before each
   snapshot.
6. ``close()`` on orderly shutdown (not after a crash).

All calls happen on one thread (the executor); components need no locks.
An exception escaping ``process`` is a poison record: the record is tried
again ``topology.record.max.retries`` times (default 3), then sent to the
topology's dead letters (``Topology.with_dead_letters``) with the exception,
and the next record follows; raise ``headwater.DeadLetter`` to skip the
retries. An exception escaping any other call is logged with its traceback,
counted, and the instance process restarts (its in-flight tuples are
replayed under at-least-once).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, runtime_checkable

from ._stream import DEFAULT_STREAM, Input, Stream
from ._tuple import Tuple

if TYPE_CHECKING:
    from ..wire._control import ControlMessage
    from ._state import KeyedState, State


class ComponentView(Protocol):
    """What a running component sees of one component of its topology (a ``ComponentSpec``)."""

    @property
    def name(self) -> str: ...
    @property
    def kind(self) -> Literal["spout", "bolt"]: ...
    @property
    def parallelism(self) -> int: ...
    @property
    def inputs(self) -> tuple[Input, ...]: ...
    @property
    def outputs(self) -> tuple[Stream, ...]: ...
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def streams(self) -> tuple[Stream, ...]: ...
    def stream(self, name: str) -> Stream | None: ...


class TopologyView(Protocol):
    """What a running component sees of its topology (the ``Topology`` it runs in).

    A Protocol, so that this module needs nothing of ``_topology.py``, which
    imports it (a ``Topology`` satisfies it).
    """

    @property
    def name(self) -> str: ...
    @property
    def components(self) -> Sequence[ComponentView]: ...
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def dead_letters(self) -> str | None: ...
    def component(self, name: str) -> ComponentView:
        """The component called ``name`` (KeyError if there is none)."""
        ...


class Context(Protocol):
    """What a running component sees of the runtime. Use only on the executor thread."""

    @property
    def task_id(self) -> int: ...
    @property
    def component(self) -> str: ...
    @property
    def component_index(self) -> int: ...
    @property
    def topology_name(self) -> str: ...
    @property
    def config(self) -> Mapping[str, Any]: ...
    @property
    def topology(self) -> TopologyView: ...
    @property
    def log(self) -> logging.Logger: ...

    def component_tasks(self, component: str) -> list[int]:
        """Sorted task ids of ``component``."""
        ...

    def emit(
        self,
        values: Sequence[Any],
        stream: str = DEFAULT_STREAM,
        *,
        tup_id: Any = None,
        anchors: Sequence[Tuple] | None = None,
        direct_task: int | None = None,
        need_task_ids: bool = False,
    ) -> list[int] | None:
        """Send ``values`` downstream; may block while the output buffer is full."""
        ...

    def emitter(self, stream: str = DEFAULT_STREAM) -> Callable[[list[Any]], None]:
        """A bound ``emit`` for untracked tuples on ``stream`` (no ``tup_id``, no anchors):
        the same as ``emit(values, stream)``, cheaper per call; ``values`` must be a list."""
        ...

    def emitter_all(self, stream: str = DEFAULT_STREAM) -> Callable[[list[list[Any]]], None]:
        """``emitter``'s emit for many tuples at once: ``emit_all(records)`` is the bound
        emit of each list in ``records``, in order (cheaper where every tuple of the stream
        goes to the same tasks). ``records`` may be reused once the call returns."""
        ...

    def emitter_columns(self, stream: str = DEFAULT_STREAM) -> Callable[[list[list[Any]]], None]:
        """``emitter_all`` for tuples given as columns: ``emit_columns(cols)`` emits the
        tuples ``[cols[0][i], cols[1][i], ...]`` in order, every column as long as the
        first. Where every tuple of the stream goes to the same tasks, the columns join
        their buffers as they are (no list per tuple; they leave as a columnar frame).
        ``cols`` and its lists may be reused once the call returns. ``EmitError``, before
        any tuple leaves, unless ``cols`` is a list of lists (or tuples) of one length."""
        ...

    def ack(self, tup: Tuple) -> None: ...
    def fail(self, tup: Tuple) -> None: ...

    @property
    def state(self) -> State:
        """This instance's checkpointed state (exactly-once topologies restore it)."""
        ...

    def keyed_state(self, name: str) -> KeyedState:
        """A checkpointed mapping from the keys of a fields-grouped input to values."""
        ...

    def incr(self, counter: str, by: int = 1) -> None:
        """Add to a user counter, reported per task as metric ``user:<counter>``."""
        ...

    def retry_record(
        self, component: str, attempt: Callable[[], Any], error: Exception, record: Any
    ) -> bool:
        """``attempt`` (one record's work) raised ``error``: run it again up to
        ``topology.record.max.retries`` times; True once one works. If all raise, the
        record goes to the dead letters as ``component``'s, and False. (The runtime does
        this for ``process``; the DSL's steps call it for their functions.)"""
        ...


class Spout:
    """A source. Subclass it and implement :meth:`next_tuple`.

    >>> class Numbers(Spout):
    ...     outputs = (Stream(("n",)),)
    ...     def open(self, ctx):
    ...         self.ctx, self.n = ctx, 0
    ...     def next_tuple(self):
    ...         self.n += 1
    ...         self.ctx.emit([self.n])
    """

    outputs: ClassVar[Sequence[Stream | str]] = ()

    def open(self, ctx: Context) -> None:
        """Called once before anything else."""

    def next_tuple(self) -> bool | None:
        """Emit a few tuples. Return True when it did work without emitting (the runtime
        idles a spout whose call emitted nothing and did not say so)."""
        raise NotImplementedError(f"{type(self).__qualname__} must implement next_tuple()")

    def on_ack(self, tup_id: Any) -> None:
        """The tuple tree rooted at ``tup_id`` was fully processed."""

    def on_fail(self, tup_id: Any) -> None:
        """The tuple tree rooted at ``tup_id`` failed or timed out; replay it if you can."""

    def activate(self) -> None:
        """The topology was activated; ``next_tuple`` calls resume."""

    def on_restore(self, checkpoint_id: int) -> None:
        """Exactly-once: state was restored from ``checkpoint_id`` (0: a clean start)."""

    def on_checkpoint(self, checkpoint_id: int) -> None:
        """Exactly-once: a snapshot of ``ctx.state`` is about to be taken."""

    def on_commit(self, checkpoint_id: int) -> None:
        """Exactly-once: ``checkpoint_id`` is complete in every instance."""

    def deactivate(self) -> None:
        """The topology was deactivated; ``next_tuple`` calls pause."""

    def close(self) -> None:
        """Orderly shutdown."""


class Bolt:
    """An operator or sink. Subclass it and implement :meth:`process`."""

    outputs: ClassVar[Sequence[Stream | str]] = ()

    def open(self, ctx: Context) -> None:
        """Called once before anything else."""

    def process(self, tup: Tuple) -> None:
        raise NotImplementedError(f"{type(self).__qualname__} must implement process()")

    def on_tick(self, tup: Tuple) -> None:
        """Called every ``topology.tick.tuple.freq.secs`` seconds when configured."""

    def on_restore(self, checkpoint_id: int) -> None:
        """Exactly-once: state was restored from ``checkpoint_id`` (0: a clean start)."""

    def on_checkpoint(self, checkpoint_id: int) -> None:
        """Exactly-once: a snapshot of ``ctx.state`` is about to be taken."""

    def on_commit(self, checkpoint_id: int) -> None:
        """Exactly-once: ``checkpoint_id`` is complete in every instance."""

    def close(self) -> None:
        """Orderly shutdown."""


Component = Spout | Bolt


@runtime_checkable
class BatchBolt(Protocol):
    """A bolt that takes a whole frame of untracked tuples at once (the DSL's chains).

    The instance checks for it once, when it opens the component: for a data
    frame without anchors it calls ``process_values`` instead of building a
    ``Tuple`` per record and calling ``process``. The bolt retries and
    dead-letters its own records (``Context.retry_record``); ``process`` is
    still called for anchored tuples.
    """

    def process_values(
        self, component: str, stream: str, task: int, entries: list[list[Any]]
    ) -> None: ...


@runtime_checkable
class ColumnBolt(Protocol):
    """A ``BatchBolt`` that takes a columnar frame whole (the DSL's chains).

    A frame of untracked tuples of one shape travels as one list per field
    (``wire/_columns.py``); the instance hands such a bolt those ``columns`` (each
    as long as the frame's tuples) instead of making a value list per tuple, and
    calls ``process_values`` for a frame of rows.
    """

    def process_columns(
        self, component: str, stream: str, task: int, columns: list[list[Any]]
    ) -> None: ...


@runtime_checkable
class SystemComponent(Protocol):
    """A runtime component that takes control messages.

    The instance hands it every control message that is none of its own
    (activate, checkpoint, commit, ...), on the executor thread, between
    ``next_tuple`` or ``process`` calls. Checked once at setup.
    """

    def on_system(self, msg: ControlMessage) -> None: ...


@runtime_checkable
class BoundedSource(Protocol):
    """A source that can end: ``exhausted()`` is true once it has nothing more.

    A DSL pipeline sends the end of event time as its watermark after it, so every
    window closes. Checked once, when the source opens.
    """

    def exhausted(self) -> bool: ...


@runtime_checkable
class UplinkReceiver(Protocol):
    """A runtime component (the cloud's uplink receiver) that takes agents' batches.

    The instance hands it every ``UPLINK`` frame the stream manager's ingress
    delivers: the agent, the batch's sequence number and its predecessor's, and
    the rows (msgpack). Checked once at setup.
    """

    def on_uplink(self, agent: str, seq: int, prev: int, rows: memoryview) -> None: ...


@runtime_checkable
class SystemContext(Protocol):
    """A context that can talk to its stream manager (the runtime's context does).

    Runtime components (the log spout, the uplink's sink and receiver) send
    control messages through it; a component that may also run under a plain
    ``Context`` (a test's) checks ``isinstance(ctx, SystemContext)`` once, in
    ``open``.
    """

    def system(self, msg: ControlMessage) -> None:
        """Send a control message to the stream manager."""
        ...


@runtime_checkable
class RuntimeContext(Context, SystemContext, Protocol):
    """The whole context the runtime gives its own components (checked once, in ``open``)."""

    def system_frame(self, frame: bytes) -> None:
        """Send a ready frame (an outbox batch) to the stream manager."""
        ...

    def report_dead_letter(self, row: Sequence[Any], origin: str) -> None:
        """Report a dead letter made elsewhere (an edge domain's) as this instance's own."""
        ...

    def flush(self) -> None:
        """Send everything emitted so far now, in order: nothing emitted later overtakes it
        (a move's fence, which must fall between the same records at every task)."""
        ...

    def keyed_names(self) -> list[str]:
        """The names of every keyed state the task holds (a move's hand-over splits them)."""
        ...
