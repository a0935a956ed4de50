"""What an instance's emitter holds until it sends: batches of tuples and ack bookkeeping.

``Batches`` keeps the tuple buffers per (destination task, stream, rooted), the spout's
new roots and the bolts' XOR-merged acks and fails, and turns them into frames (untracked
tuples of one shape as columns, ``wire/_columns.py``; the others as rows): a buffer
leaves when it is full (the emitter calls ``flush``), when its oldest entry has lingered
(``flush_due``), or when the executor goes idle (``flush_all``). It takes only the sink
frames go to; the emitter (``_emitter.py``) does the routing and binds the per-record
paths straight to ``buffers``, ``roots`` and ``flush``, so no record pays a call for the
split. ``buffers`` and ``roots`` are never rebound: they are emptied in place.
Executor thread only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from .._exceptions import SerializationError
from ..api import Tuple
from ..api._stream import PUNCTUATION
from ..plan._fence_streams import FENCE_OUT
from ..wire import Kind, columns, encode, encode_frame, rows
from ..wire._frame import STMGR

Sink = Callable[[bytes], None]


class _Buffer:
    """One destination's tuples: ``cols``, columns its emitter gave as columns
    (``Emitter.unrooted_columns``), then ``entries``, tuples given one by one (a buffer
    with rows takes no columns until it has left, so the columns are always the older)."""

    __slots__ = ("cols", "entries", "since")

    def __init__(self, now: float) -> None:
        self.entries: list[Any] = []
        self.cols: list[list[Any]] | None = None
        self.since = now


class Batches:
    """The buffers, roots, acks and fails of one task's emitter, and their flushing."""

    def __init__(
        self,
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
        self.buffers: dict[tuple[int, str, bool], _Buffer] = {}
        self.roots: list[int] = []  # spout: flat [root, xor_of_edges, ...]
        self._acks: dict[int, dict[int, int]] = {}  # spout task -> root -> xor
        self._fails: dict[int, list[int]] = {}
        self._control_since: float | None = None
        self._stream_bytes: dict[str, bytes] = {}
        self._punctuation: set[str] = set()
        self.serialization_errors = 0

    def route_streams(self, streams: Iterable[str]) -> None:
        """The streams of the emitter's routing (its revision): their header bytes, and
        which carry punctuation."""
        names = list(streams)
        self._stream_bytes = {name: name.encode() for name in names}
        self._punctuation = {n for n in names if n.startswith(PUNCTUATION) or n == FENCE_OUT}

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
        for key, buf in list(self.buffers.items()):
            if buf.since <= deadline:
                self.flush(key, buf)
        if self._acks or self._fails or self.roots:
            if self._control_since is None:
                self._control_since = now
            elif self._control_since <= deadline or len(self.roots) > 2 * self.batch_size:
                self._flush_control()

    def flush_all(self) -> None:
        # roots before data: the tracker must know a root before any ack for it
        self._flush_roots()
        for key, buf in list(self.buffers.items()):
            self.flush(key, buf)
        self._flush_control()

    @property
    def buffered(self) -> int:
        """Tuples and ack entries waiting to leave."""
        return (
            sum(len(b.entries) + (len(b.cols[0]) if b.cols else 0) for b in self.buffers.values())
            + len(self.roots)
            + sum(len(a) for a in self._acks.values())
            + sum(len(f) for f in self._fails.values())
        )

    def _flush_roots(self) -> None:
        roots = self.roots
        if roots:
            count, payload = len(roots) // 2, encode(roots)
            roots.clear()  # in place: the emitter's emit holds this list
            self.sink(encode_frame(Kind.ROOTS, STMGR, self.task, count, b"", payload))

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

    def flush(self, key: tuple[int, str, bool], buf: _Buffer) -> None:
        if self.buffers.get(key) is not buf:
            return  # already gone, ahead of punctuation
        del self.buffers[key]
        entries, given = buf.entries, buf.cols
        if not entries and not given:
            return
        self._flush_roots()
        dest, stream, rooted = key
        if stream in self._punctuation:  # data to the same task first
            for other, obuf in list(self.buffers.items()):
                if other[0] == dest and other[1] not in self._punctuation:
                    self.flush(other, obuf)
        if given:  # the older
            self._send(dest, stream, False, None, given)
        if entries:  # untracked tuples of one shape still leave as columns
            self._send(dest, stream, rooted, entries, None if rooted else columns(entries))

    def _send(
        self,
        dest: int,
        stream: str,
        rooted: bool,
        entries: list[Any] | None,
        cols: list[list[Any]] | None,
    ) -> None:
        """One frame: ``cols`` where given and every value encodes, else ``entries`` (the
        rows of ``cols`` when None) as rows, without the tuples the codec cannot carry."""
        if cols is not None:
            try:
                payload = encode(cols)
            except SerializationError:  # rows, below, find and drop the tuples at fault
                pass
            else:
                self._frame(Kind.DATA_COLUMNS, dest, stream, len(cols[0]), payload)
                return
        if entries is None:
            assert cols is not None
            entries = rows(cols)
        try:
            payload = encode(entries)
        except SerializationError:
            entries, payload = self._encode_valid(entries, stream, rooted)
            if not entries:
                return
        self._frame(Kind.DATA_ROOTED if rooted else Kind.DATA, dest, stream, len(entries), payload)

    def _frame(self, kind: Kind, dest: int, stream: str, n: int, payload: bytes) -> None:
        self.sink(encode_frame(kind, dest, self.task, n, self._stream_bytes[stream], payload))

    def count_bad(self, stream: str, reason: str) -> None:
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
                self.count_bad(stream, str(exc))
                if rooted:  # fail its tree now instead of waiting for the timeout
                    flat = entry[1]
                    for i in range(0, len(flat), 3):
                        self._fails.setdefault(flat[i], []).append(flat[i + 1])
            else:
                good.append(entry)
        return good, encode(good) if good else b""
