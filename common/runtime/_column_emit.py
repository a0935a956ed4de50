"""Tuples given as columns (``Context.emitter_columns``), into an emitter's buffers.

The DSL's compiled runs gather a frame's output as two columns, keys and values
(``dsl/_compile.py``), and hand them over with one call. Where every tuple of the stream
goes to the same tasks (``Router.fixed``: one task, ``global``, ``all``) the columns join
each destination buffer's columns a slice at a time, with no list made per tuple, and
leave as a columnar frame (``wire/_columns.py``); elsewhere each tuple is routed as
``Emitter.unrooted``'s emit routes it, inline. A buffer holding rows takes no columns
until it has left (``_batches._Buffer``), so frames keep the order of the emits.

Called once per source record in a chain that fans out (a sentence's words): the paths
are kept short. Executor thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..plan._routing import Selector
from ..wire import column_length, rows
from ._batches import _Buffer

Key = tuple[int, str, bool]  # a buffer's: (destination task, stream, rooted)


class Emits(Protocol):
    """What of an ``Emitter`` the column emit uses: its buffers, and its counts."""

    batch_size: int
    emitted: int
    dropped: bool
    _buffers: dict[Key, _Buffer]

    def _flush(self, key: Key, buf: _Buffer) -> None: ...
    def _count_bad(self, stream: str, reason: str) -> None: ...


class Route(Protocol):
    """A stream's routing as the emitter keeps it (``_emitter._Route``)."""

    select: Selector | None
    keys: list[Key] | None


class ColumnEmit:
    """The emit of tuples given as columns on one ``stream`` of an emitter (``__call__``);
    ``emit``: the emitter's ``unrooted`` emit there, for the general path."""

    def __init__(
        self,
        em: Emits,
        route: Route,
        stream: str,
        counts: dict[str, int],
        emit: Callable[[list[Any]], None],
    ) -> None:
        self.em, self.route, self.stream, self.counts, self.emit = em, route, stream, counts, emit
        self.buffers, self.size, self.flush = em._buffers, em.batch_size, em._flush

    def __call__(self, cols: list[list[Any]]) -> None:
        n = column_length(cols)
        if not n:
            return
        keys = self.route.keys
        if keys is None:
            n = self._routed(cols, n)
        else:
            self._to_fixed(keys, cols, n)
        if n:
            self.em.emitted += n
            self.counts[self.stream] = self.counts.get(self.stream, 0) + n

    def _to_fixed(self, keys: Sequence[Key], cols: list[list[Any]], n: int) -> None:
        buffers, size, flush = self.buffers, self.size, self.flush
        for key in keys:
            start = 0
            while start < n:
                buf = buffers.get(key)
                if buf is None:
                    buf = buffers[key] = _Buffer(time.monotonic())
                have = buf.cols
                if buf.entries or (have is not None and len(have) != len(cols)):
                    flush(key, buf)  # rows (or another width) before: they leave first
                    continue
                if have is None:
                    have = buf.cols = [[] for _ in cols]
                room = size - len(have[0])
                if start == 0 and room >= n:  # the common case: all of them
                    for mine, col in zip(have, cols):  # noqa: B905 - as long, checked
                        mine.extend(col)
                    start = n
                else:
                    end = start + max(room, 1)
                    for mine, col in zip(have, cols):  # noqa: B905 - as above
                        mine.extend(col[start:end])
                    start = end
                if len(have[0]) >= size:
                    flush(key, buf)

    def _routed(self, cols: list[list[Any]], n: int) -> int:
        """``unrooted``'s emit, inline, for each tuple; how many were not dropped (0 when
        the general path counted them itself)."""
        select, stream = self.route.select, self.stream
        if select is None:  # none or several subscribers
            for values in rows(cols):
                self.emit(values)
            return 0
        buffers, size, flush = self.buffers, self.size, self.flush
        for values in rows(cols):
            try:
                dests = select(values, None)
            except (TypeError, ValueError, OverflowError) as exc:
                self.em.dropped = True
                self.em._count_bad(stream, f"grouping key cannot be encoded: {exc}")
                n -= 1
                continue
            for dest in dests:
                key = (dest, stream, False)
                buf = buffers.get(key)
                if buf is None:
                    buf = buffers[key] = _Buffer(time.monotonic())
                entries = buf.entries
                entries.append(values)
                if len(entries) >= size:
                    flush(key, buf)
        return n
