"""Routing of what an instance emits into batches: the sender's half of a stream.

``Emitter`` picks each tuple's destination tasks (the revision's ``Router``), gives a
tracked tuple its edge ids, and appends it to its destination's batch; the batches,
the ack bookkeeping and the frames they leave in are ``Batches`` (``_batches.py``).

Tuples are buffered per (destination task, stream, rooted) and leave as one
frame when a buffer reaches the batch size, when its oldest tuple has waited
the linger time, or when the executor goes idle. Values are encoded once per
batch; a value the codec rejects is dropped alone, logged and counted, and
the rest of its batch goes on.

Frames of one stream keep their order. Streams named ``wm:*`` carry
punctuation (the DSL's watermarks: "everything I sent before this is at or
below time T"), as does a move's fence (``__move_fence__``: "every row of this agent's
before this"), so their frames must not overtake data sent before them: a
punctuation buffer leaves only after the destination's other buffers.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._exceptions import EmitError
from ..api import Tuple
from ..plan._routing import Router, Selector
from ._batches import Batches, Sink, _Buffer
from ._column_emit import ColumnEmit

_getrandbits = random.getrandbits


class _Route:
    """How a bound emit routes one stream: its single selector (None: none or several, the
    general path), the buffer keys of its fixed destinations (None: they depend on the
    tuple), and where its one subscriber groups by one field, that field and its tasks
    (``Router.by_field``) with the task index of the string keys seen (``_column_emit``).
    ``Emitter.switch`` refills it for a new revision's routing."""

    __slots__ = ("by_field", "keys", "seen", "select")

    def __init__(self) -> None:
        self.select: Selector | None = None
        self.keys: list[tuple[int, str, bool]] | None = None
        self.by_field: tuple[int, list[int]] | None = None
        self.seen: dict[str, int] = {}


class Emitter:
    """Routes, batches and encodes what one instance emits. Executor thread only."""

    def __init__(
        self,
        router: Router,
        task: int,
        component: str,
        sink: Sink,
        batch_size: int,
        linger_s: float,
        log: logging.Logger,
    ) -> None:
        self.task = task
        self.component = component
        self.batch_size = batch_size
        self.log = log
        batches = self._batches = Batches(task, component, sink, batch_size, linger_s, log)
        # the per-record paths use these directly (no call to reach them); ``Batches``
        # empties its buffers and roots in place, never rebinding them
        self._buffers = batches.buffers
        self._roots = batches.roots
        self._flush = batches.flush
        self._count_bad = batches.count_bad
        self.ack: Callable[[Tuple], None] = batches.ack
        self.fail: Callable[[Tuple], None] = batches.fail
        self.flush_due: Callable[[float], None] = batches.flush_due
        self.flush_all: Callable[[], None] = batches.flush_all
        self._routes: dict[str, _Route] = {}  # per stream, for the emits bound to it
        self.emitted = 0
        self.dropped = False  # set when emit() dropped its tuple; the caller clears it
        self.switch(router)  # the router, and what the emitter keeps of its streams

    @property
    def buffered(self) -> int:
        """Tuples and ack entries waiting to leave."""
        return self._batches.buffered

    @property
    def serialization_errors(self) -> int:
        """Tuples dropped because the codec rejected a value or a grouping key."""
        return self._batches.serialization_errors

    # -- data -----------------------------------------------------------------
    def emit(
        self,
        values: list[Any],
        stream: str,
        roots: Sequence[tuple[int, int]] | None,
        anchors: Sequence[Tuple] | None,
        direct_task: int | None,
    ) -> list[int]:
        """Route one tuple. ``roots``: (spout task, root id) pairs when the tuple is tracked.

        Returns the destination tasks. For a tracked tuple, each destination gets
        a fresh edge id, XORed into every anchor (bolts) or into the spout's root
        entry (spouts).
        """
        dests: list[int] = []
        try:
            for select in self.router.selectors(stream):
                dests.extend(select(values, direct_task))
        except (TypeError, ValueError, OverflowError) as exc:
            # a grouping key the codec cannot hash: drop this tuple alone
            self.dropped = True
            self._count_bad(stream, f"grouping key cannot be encoded: {exc}")
            return []
        if not dests:
            return dests
        now = time.monotonic()
        buffers = self._buffers
        if roots is None:
            for dest in dests:
                key = (dest, stream, False)
                buf = buffers.get(key)
                if buf is None:
                    buf = buffers[key] = _Buffer(now)
                buf.entries.append(values)
                if len(buf.entries) >= self.batch_size:
                    self._flush(key, buf)
        else:
            for dest in dests:
                edge = _getrandbits(63) or 1
                flat: list[int] = []
                for rtask, rid in roots:
                    flat += (rtask, rid, edge)
                if anchors is not None:
                    for a in anchors:
                        a._ack_val ^= edge
                else:
                    for _, rid in roots:
                        self._roots += (rid, edge)
                key = (dest, stream, True)
                buf = buffers.get(key)
                if buf is None:
                    buf = buffers[key] = _Buffer(now)
                buf.entries.append((values, flat))
                if len(buf.entries) >= self.batch_size:
                    self._flush(key, buf)
        self.emitted += 1
        return dests

    # -- bound emits (a step's per-record fast path) ---------------------------------
    def switch(self, router: Router) -> None:
        """Route with ``router`` from now on: ``emit``, and every emit bound before."""
        self.router = router
        self._batches.route_streams(router.streams)
        for stream, route in self._routes.items():
            self._refill(stream, route)

    def _route_for(self, stream: str) -> _Route:
        route = self._routes.get(stream)
        if route is None:
            self.router.selectors(stream)  # an undeclared stream fails at binding
            route = self._routes[stream] = _Route()
            self._refill(stream, route)
        return route

    def _refill(self, stream: str, route: _Route) -> None:
        try:
            selectors, fixed = self.router.selectors(stream), self.router.fixed(stream)
        except EmitError:  # gone from this revision: ``emit`` says so on use
            selectors, fixed = [], None
        route.select = selectors[0] if len(selectors) == 1 else None
        route.keys = [(dest, stream, False) for dest in fixed] if fixed else None
        route.by_field = self.router.by_field(stream)  # None unless one subscriber, by one field
        route.seen = {}  # another revision's tasks: other indexes

    def unrooted(self, stream: str, counts: dict[str, int]) -> Callable[[list[Any]], None]:
        """``emit`` of untracked tuples on ``stream``, bound once: the per-record fast path
        of a step that emits every record (counted in ``counts`` by stream, as ``emit``'s
        caller does). It routes as the emitter does at each call (``switch``)."""
        route = self._route_for(stream)
        buffers, size, flush, monotonic = (
            self._buffers,
            self.batch_size,
            self._flush,
            time.monotonic,
        )

        def emit(values: list[Any]) -> None:
            select = route.select
            if select is None:  # none or several subscribers: the general path
                self.emit(values, stream, None, None, None)
                counts[stream] = counts.get(stream, 0) + 1
                return
            try:
                dests = select(values, None)
            except (TypeError, ValueError, OverflowError) as exc:
                self.dropped = True
                self._count_bad(stream, f"grouping key cannot be encoded: {exc}")
                return
            for dest in dests:
                key = (dest, stream, False)
                buf = buffers.get(key)
                if buf is None:
                    buf = buffers[key] = _Buffer(monotonic())
                entries = buf.entries
                entries.append(values)
                if len(entries) >= size:
                    flush(key, buf)
            self.emitted += 1
            counts[stream] = counts.get(stream, 0) + 1

        return emit

    def unrooted_all(
        self, stream: str, counts: dict[str, int]
    ) -> Callable[[list[list[Any]]], None]:
        """``unrooted``'s emit for many records at once, in order: ``emit_all(records)`` is
        ``emit(r) for r in records``, frame for frame to each task (frames to different
        tasks may leave in another order, as they may anyway). Where the stream's
        destinations never depend on the record (``Router.fixed``: one task, ``global``,
        ``all``), the records join their buffers a slice at a time, with no call per record.
        ``records`` is not kept."""
        route = self._route_for(stream)
        emit = self.unrooted(stream, counts)
        buffers, size, flush, monotonic = (
            self._buffers,
            self.batch_size,
            self._flush,
            time.monotonic,
        )

        def emit_all(records: list[list[Any]]) -> None:
            keys = route.keys
            if keys is None:
                for values in records:
                    emit(values)
                return
            n = len(records)
            if not n:
                return
            for key in keys:
                start = 0
                while start < n:
                    buf = buffers.get(key)
                    if buf is None:
                        buf = buffers[key] = _Buffer(monotonic())
                    entries = buf.entries
                    room = max(size - len(entries), 1)
                    if start == 0 and room >= n:
                        entries.extend(records)
                        start = n
                    else:
                        entries.extend(records[start : start + room])
                        start += room
                    if len(entries) >= size:
                        flush(key, buf)
            self.emitted += n
            counts[stream] = counts.get(stream, 0) + n

        return emit_all

    def unrooted_columns(
        self, stream: str, counts: dict[str, int]
    ) -> Callable[[list[list[Any]]], None]:
        """``unrooted_all`` for tuples given as columns (``Context.emitter_columns``;
        ``_column_emit.py``). ``cols`` is not kept."""
        route = self._route_for(stream)
        return ColumnEmit(self, route, stream, counts, self.unrooted(stream, counts))
