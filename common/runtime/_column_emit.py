"""Tuples given as columns (``Context.emitter_columns``), into an emitter's buffers.

The DSL's compiled runs gather a frame's output as two columns, keys and values
(``dsl/_compile.py``), and hand them over with one call. Where every tuple of the stream
goes to the same tasks (``Router.fixed``: one task, ``global``, ``all``) the columns join
each destination buffer's columns a slice at a time, with no list made per tuple, and
leave as a columnar frame (``wire/_columns.py``). Where the one subscriber groups by one
field (``Router.by_field``), the rows are split by their key's task into columns of each
task's, which join its buffer the same way; elsewhere each tuple is routed as
``Emitter.unrooted``'s emit routes it, inline. A buffer holding rows takes no columns
until it has left (``_batches._Buffer``), so frames keep the order of the emits.

Called once per source record in a chain that fans out (a sentence's words): the paths
are kept short. Executor thread only.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

from ..plan._routing import Selector, key_hash
from ..wire import column_length, rows
from ._batches import _Buffer

Key = tuple[int, str, bool]  # a buffer's: (destination task, stream, rooted)
_SEEN = 8192  # string keys whose task a route remembers (a few hundred KB at most)
_SHORT = 64  # longer keys are hashed each time
_SPLIT_MIN = 32  # fewer (or under 4 a task) go one by one: a split costs lists and a join a task


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
    by_field: tuple[int, list[int]] | None
    seen: dict[str, int]


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
        route = self.route
        keys = route.keys
        if keys is not None:
            for key in keys:
                self._join(key, cols, n)
        elif route.by_field is None or not self._split(route.by_field, cols, n):
            n = self._routed(cols, n)
        if n:
            self.em.emitted += n
            self.counts[self.stream] = self.counts.get(self.stream, 0) + n

    def _split(self, by_field: tuple[int, list[int]], cols: list[list[Any]], n: int) -> bool:
        """A fields grouping on one field: each task's rows as columns of their own, in
        order, joined to its buffer; the task of a string key is looked up once per revision
        (``Route.seen``, at most ``_SEEN`` short keys). False, with nothing done, when a key
        cannot be encoded: the tuple-by-tuple path drops it and counts it; False too for fewer
        than ``_SPLIT_MIN`` tuples or 4 a task, which go one by one for less."""
        field, tasks = by_field
        ntasks, seen = len(tasks), self.route.seen
        if n < _SPLIT_MIN or n < 4 * ntasks:
            return False
        index: list[int] = []
        mark = index.append
        for key in cols[field]:
            i = seen.get(key) if key.__class__ is str else None
            if i is None:
                try:
                    i = key_hash(key) % ntasks
                except (TypeError, ValueError, OverflowError):
                    return False
                if key.__class__ is str and len(key) <= _SHORT and len(seen) < _SEEN:
                    seen[key] = i
            mark(i)
        parts: list[list[list[Any]]] = [[[] for _ in cols] for _ in tasks]
        for c, col in enumerate(cols):
            adds = [part[c].append for part in parts]
            for i, value in zip(index, col):  # noqa: B905 - as long, checked
                adds[i](value)
        stream = self.stream
        for task, part in zip(tasks, parts):  # noqa: B905 - one part a task
            m = len(part[0])
            if m:
                self._join((task, stream, False), part, m)
        return True

    def _join(self, key: Key, cols: list[list[Any]], n: int) -> None:
        """``cols`` (``n`` rows) onto the columns of ``key``'s buffer, flushed when full."""
        buffers, size, flush = self.buffers, self.size, self.flush
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
