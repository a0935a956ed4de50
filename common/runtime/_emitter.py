"""Batching of outgoing tuples and acks in an instance.

Tuples are buffered per (destination task, stream, rooted) and leave as one
frame when a buffer reaches the batch size, when its oldest tuple has waited
the linger time, or when the executor goes idle. Values are encoded once per
batch; a value the codec rejects is dropped alone, logged and counted, and
the rest of its batch goes on.

Frames of one stream keep their order. Streams named ``wm:*`` carry
punctuation (the DSL's watermarks: "everything I sent before this is at or
below time T"), so their frames must not overtake data sent before them: a
punctuation buffer leaves only after the destination's other buffers.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from typing import Any

from .._exceptions import EmitError, SerializationError
from ..api import Tuple
from ..api._stream import PUNCTUATION
from ..plan._routing import Router, Selector
from ..wire import Kind, encode, encode_frame
from ..wire._frame import STMGR

Sink = Callable[[bytes], None]
_getrandbits = random.getrandbits


class _Buffer:
    __slots__ = ("entries", "since")

    def __init__(self, now: float) -> None:
        self.entries: list[Any] = []
        self.since = now


class _Route:
    """How a bound emit routes one stream: its single selector (None: none or several, the
    general path), and the buffer keys of its fixed destinations (None: they depend on the
    tuple). ``Emitter.switch`` refills it for a new revision's routing."""

    __slots__ = ("keys", "select")

    def __init__(self) -> None:
        self.select: Selector | None = None
        self.keys: list[tuple[int, str, bool]] | None = None


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
        self.sink = sink
        self.batch_size = batch_size
        self.linger_s = linger_s
        self.log = log
        self._buffers: dict[tuple[int, str, bool], _Buffer] = {}
        self._routes: dict[str, _Route] = {}  # per stream, for the emits bound to it
        self._acks: dict[int, dict[int, int]] = {}  # spout task -> root -> xor
        self._fails: dict[int, list[int]] = {}
        self._roots: list[int] = []  # spout: flat [root, xor_of_edges, ...]
        self._control_since: float | None = None
        self.emitted = 0
        self.serialization_errors = 0
        self.dropped = False  # set when emit() dropped its tuple; the caller clears it
        self.switch(router)  # the router, and what the emitter keeps of its streams

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
        self._stream_bytes = {name: name.encode() for name in router.streams}
        self._punctuation = {name for name in router.streams if name.startswith(PUNCTUATION)}
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

    def ack(self, tup: Tuple) -> None:
        roots = tup.roots
        if roots:
            val = tup._ack_val
            acks = self._acks
            for i in range(0, len(roots), 3):
                # XOR-merge acks of one root within a batch: a word-count bolt
                # acking seven words of one sentence sends one entry, not seven
                per_root = acks.get(roots[i])
                if per_root is None:
                    per_root = acks[roots[i]] = {}
                rid = roots[i + 1]
                per_root[rid] = per_root.get(rid, 0) ^ roots[i + 2] ^ val

    def fail(self, tup: Tuple) -> None:
        roots = tup.roots
        if roots:
            for i in range(0, len(roots), 3):
                self._fails.setdefault(roots[i], []).append(roots[i + 1])

    # -- flushing -------------------------------------------------------------
    def flush_due(self, now: float) -> None:
        """Flush buffers whose oldest entry has lingered long enough, acks included.

        Ack bookkeeping lingers like data (from the first flush_due that sees it),
        so that acking rides in a few large frames instead of one per tuple.
        """
        deadline = now - self.linger_s
        for key, buf in list(self._buffers.items()):
            if buf.since <= deadline:
                self._flush(key, buf)
        if self._acks or self._fails or self._roots:
            if self._control_since is None:
                self._control_since = now
            elif self._control_since <= deadline or len(self._roots) > 2 * self.batch_size:
                self._flush_control()

    def flush_all(self) -> None:
        # roots before data: the tracker must know a root before any ack for it
        self._flush_roots()
        for key, buf in list(self._buffers.items()):
            self._flush(key, buf)
        self._flush_control()

    @property
    def buffered(self) -> int:
        """Tuples and ack entries waiting to leave."""
        return (
            sum(len(b.entries) for b in self._buffers.values())
            + len(self._roots)
            + sum(len(a) for a in self._acks.values())
            + sum(len(f) for f in self._fails.values())
        )

    def _flush_roots(self) -> None:
        if self._roots:
            roots, self._roots = self._roots, []
            self.sink(
                encode_frame(Kind.ROOTS, STMGR, self.task, len(roots) // 2, b"", encode(roots))
            )

    def _flush_control(self) -> None:
        self._control_since = None
        self._flush_roots()
        if self._acks:
            acks, self._acks = self._acks, {}
            for dest, per_root in acks.items():
                flat = [x for pair in per_root.items() if pair[1] for x in pair]
                if not flat:
                    continue
                self.sink(
                    encode_frame(Kind.ACK, dest, self.task, len(flat) // 2, b"", encode(flat))
                )
        if self._fails:
            fails, self._fails = self._fails, {}
            for dest, flat in fails.items():
                self.sink(encode_frame(Kind.FAIL, dest, self.task, len(flat), b"", encode(flat)))

    def _flush(self, key: tuple[int, str, bool], buf: _Buffer) -> None:
        if self._buffers.get(key) is not buf:
            return  # already gone, ahead of punctuation
        del self._buffers[key]
        entries = buf.entries
        if not entries:
            return
        self._flush_roots()
        dest, stream, rooted = key
        if stream in self._punctuation:  # data to the same task first
            for other, obuf in list(self._buffers.items()):
                if other[0] == dest and other[1] not in self._punctuation:
                    self._flush(other, obuf)
        try:
            payload = encode(entries)
        except SerializationError:
            entries, payload = self._encode_valid(entries, stream, rooted)
            if not entries:
                return
        kind = Kind.DATA_ROOTED if rooted else Kind.DATA
        self.sink(
            encode_frame(kind, dest, self.task, len(entries), self._stream_bytes[stream], payload)
        )

    def _count_bad(self, stream: str, reason: str) -> None:
        self.serialization_errors += 1
        if self.serialization_errors <= 3:  # then quiet: the counter tells the rest
            self.log.error(
                "%s task %d dropped a tuple on stream %r: %s",
                self.component,
                self.task,
                stream,
                reason,
            )

    def _encode_valid(
        self, entries: list[Any], stream: str, rooted: bool
    ) -> tuple[list[Any], bytes]:
        good = []
        for entry in entries:
            try:
                encode(entry)
            except SerializationError as exc:
                self._count_bad(stream, str(exc))
                if rooted:  # fail its tree now instead of waiting for the timeout
                    flat = entry[1]
                    for i in range(0, len(flat), 3):
                        self._fails.setdefault(flat[i], []).append(flat[i + 1])
            else:
                good.append(entry)
        return good, encode(good) if good else b""
