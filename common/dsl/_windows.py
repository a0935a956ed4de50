"""Event-time windows: assigners and the per-key window state machine.

Time is whatever the step's timestamp function returns (integers, e.g. epoch
milliseconds). A step's *watermark* is the highest timestamp it has seen
minus its ``out_of_orderness``: it promises that no record older than that
is still expected. A window ``[start, end)`` fires (emits its result) once
the watermark reaches ``end``. Until the watermark passes ``end +
allowed_lateness`` the window is kept: a late record still counts and the
window fires again with the updated result. A record for a window already
past that is *late*: it goes to the step's side output instead, never lost.

Session windows start at a record and last ``gap`` past the last record of
the key; two sessions that come to touch or overlap merge (their accumulators too, so
a session's reduce must be associative and commutative).

The watermark is the step's task's: one key far ahead of the others moves it for
all, so a key that lags (a gateway sending its backlog after an outage) finds its
windows gone and its records late. ``clock="key"`` (``KeyClockWindows``, tumbling
windows only) gives each key a clock of its own instead: a key has one open window,
and the key's first record of another window closes it (emits it) and opens that
record's window. No watermark, no ``out_of_orderness``, no lateness, nothing late:
every record counts in exactly one window that closes, however far the other keys
are ahead. A key's clock may go back (a record of a window of the key's that has
closed): that window opens afresh with that record and closes, a second result for
the same window, at the key's next record of another window. A key's newest window
stays open until its next window's first record (the end of a bounded input closes
nothing). The state is the key's open window alone, ``[start, acc]`` in keyed state.

>>> w = WindowedReduce(Tumbling(10), lambda a, b: a + b, out_of_orderness=0, lateness=0)
>>> out, late = [], []
>>> for ts, v in [(1, 1), (4, 2), (12, 5)]:
...     w.add("k", ts, v, out.append, late.append)
>>> out  # [key, start, end, value]; [10, 20) is still open
[['k', 0, 10, 3]]
>>> k = KeyClockWindows(Tumbling(10), lambda a, b: a + b)
>>> out = []
>>> for key, ts, v in [("a", 1, 1), ("a", 25, 2), ("b", 3, 4), ("a", 31, 8), ("b", 12, 0)]:
...     k.add(key, ts, v, out.append)
>>> out  # b's [0, 10) closes on b's own clock, a's having long passed it
[['a', 0, 10, 1], ['a', 20, 30, 2], ['b', 0, 10, 4]]
"""

from __future__ import annotations

import math
from collections.abc import Callable, MutableMapping
from dataclasses import dataclass
from typing import Any

Reduce = Callable[[Any, Any], Any]


@dataclass(frozen=True)
class Tumbling:
    """Fixed, non-overlapping windows of ``size``."""

    size: int

    def __post_init__(self) -> None:
        if not isinstance(self.size, int) or self.size <= 0:
            raise ValueError(f"a tumbling window needs a positive whole size, got {self.size!r}")

    def assign(self, ts: int) -> list[tuple[int, int]]:
        start = ts - ts % self.size
        return [(start, start + self.size)]


@dataclass(frozen=True)
class Sliding:
    """Windows of ``size`` starting every ``slide``: a record belongs to size/slide of them."""

    size: int
    slide: int

    def __post_init__(self) -> None:
        if not (isinstance(self.size, int) and isinstance(self.slide, int)):
            raise ValueError("sliding windows need whole sizes")
        if self.slide <= 0 or self.size <= 0 or self.size % self.slide:
            raise ValueError(
                f"a sliding window needs 0 < slide and size a multiple of slide "
                f"(got size {self.size}, slide {self.slide})"
            )

    def assign(self, ts: int) -> list[tuple[int, int]]:
        last = ts - ts % self.slide
        return [
            (s, s + self.size) for s in range(last - self.size + self.slide, last + 1, self.slide)
        ]


@dataclass(frozen=True)
class Session:
    """Per key, records closer than ``gap`` to each other share a window."""

    gap: int

    def __post_init__(self) -> None:
        if not isinstance(self.gap, int) or self.gap <= 0:
            raise ValueError(f"a session window needs a positive whole gap, got {self.gap!r}")

    def assign(self, ts: int) -> list[tuple[int, int]]:
        return [(ts, ts + self.gap)]


Assigner = Tumbling | Sliding | Session


def fold_first(zero: Callable[[], Any], add: Reduce, value: Any) -> Any:
    """A window's first accumulator for ``aggregate``: ``add(zero(), value)``."""
    return add(zero(), value)


class WindowedReduce:
    """Windows per key, reduced with an associative ``reduce``; state in plain mappings.

    ``windows`` maps key -> {start: [end, acc, fired]}; ``meta`` holds the
    watermark. Both can be checkpointed state (they hold only plain values).
    """

    def __init__(
        self,
        assigner: Assigner,
        reduce: Reduce,
        *,
        out_of_orderness: int,
        lateness: int,
        windows: MutableMapping[Any, dict[int, list[Any]]] | None = None,
        meta: MutableMapping[str, Any] | None = None,
        first: Callable[[Any], Any] | None = None,
        merge: Reduce | None = None,
    ) -> None:
        """``reduce(acc, value)`` folds a record in; a window's first record becomes its
        accumulator through ``first`` (default: as it is). Sessions combine two
        accumulators with ``merge`` (default: ``reduce``)."""
        if out_of_orderness < 0 or lateness < 0:
            raise ValueError("out_of_orderness and lateness must not be negative")
        self.assigner = assigner
        self.reduce = reduce
        self.first = first
        self.merge = merge or reduce
        self.out_of_orderness = out_of_orderness
        self.lateness = lateness
        self.windows: MutableMapping[Any, dict[int, list[Any]]] = {} if windows is None else windows
        self.meta: MutableMapping[str, Any] = {} if meta is None else meta
        # window end -> keys with a window ending there (rebuilt from the state)
        self._ends: dict[int, set[Any]] = {}
        for key, wins in self.windows.items():
            for _start, (end, _acc, _fired) in wins.items():
                self._ends.setdefault(end, set()).add(key)
        # the lowest watermark at which something fires or is purged: below it, moving the
        # watermark is all there is to do (the common case: once per record)
        self._due = -math.inf

    @property
    def watermark(self) -> int | None:
        wm = self.meta.get("watermark")
        return None if wm is None else int(wm)

    def add(
        self,
        key: Any,
        ts: int,
        value: Any,
        emit: Callable[[list[Any]], None],
        late: Callable[[list[Any]], None],
    ) -> None:
        """Take one record; emit fired windows as ``[key, start, end, result]``."""
        if type(self.assigner) is Tumbling:
            self._add_tumbling(key, ts, value, emit, late)
            return
        wm = self.watermark
        wins = self.windows.get(key)
        if wins is None:
            wins = {}
        touched: list[int] = []
        live = [(s, e) for s, e in self.assigner.assign(ts) if wm is None or e + self.lateness > wm]
        if not live:
            late([key, ts, value])  # its windows are gone: the side output keeps the record
            return
        for start, end in live:
            entry = wins.get(start)
            if entry is None:
                self._open(key, wins, start, end, value)
            else:
                entry[1] = self.reduce(entry[1], value)
            touched.append(start)
        if isinstance(self.assigner, Session):
            touched = [self._merge_sessions(key, wins, touched[0])]
        self.windows[key] = wins  # reassign: keyed state notices the change
        # a late record updates a window that already fired: fire it again
        for start in touched:
            entry = wins[start]
            if entry[2] and wm is not None and entry[0] <= wm:
                emit([key, start, entry[0], entry[1]])
        self.advance(ts - self.out_of_orderness, emit)

    def _add_tumbling(
        self,
        key: Any,
        ts: int,
        value: Any,
        emit: Callable[[list[Any]], None],
        late: Callable[[list[Any]], None],
    ) -> None:
        """``add`` for one window per record, with the mapping calls made once each: the
        per-record path of most pipelines."""
        meta = self.meta
        wm = meta.get("watermark")
        size = self.assigner.size  # type: ignore[union-attr]  # Tumbling, checked by add
        start = ts - ts % size
        end = start + size
        if wm is not None and end + self.lateness <= wm:
            late([key, ts, value])  # its window is gone: the side output keeps the record
            return
        windows = self.windows
        wins = windows.get(key)
        if wins is None:
            # a key's first windows: keyed state notes the key, and that its value (a dict)
            # changes in place, so every snapshot carries it from then on; later changes
            # need no reassignment (which costs a call per record)
            wins = windows[key] = {}
        entry = wins.get(start)
        if entry is None:
            self._open(key, wins, start, end, value)
        else:
            entry[1] = self.reduce(entry[1], value)
            if entry[2] and wm is not None and end <= wm:  # a late record: fire again
                emit([key, start, end, entry[1]])
        moved = ts - self.out_of_orderness
        if wm is None or moved > wm:
            if moved < self._due:
                meta["watermark"] = moved
            else:
                self.advance(moved, emit)

    def _open(self, key: Any, wins: dict[int, list[Any]], start: int, end: int, value: Any) -> None:
        """A key's new window, its first record folded in."""
        wins[start] = [end, value if self.first is None else self.first(value), False]
        self._ends.setdefault(end, set()).add(key)
        self._due = min(self._due, end)

    def advance(self, watermark: int, emit: Callable[[list[Any]], None]) -> None:
        """Move the watermark forward (never back); fire and purge what it passes."""
        wm = self.watermark
        if wm is not None and watermark <= wm:
            return
        self.meta["watermark"] = watermark
        if watermark < self._due:
            return
        for end in sorted(e for e in self._ends if e <= watermark):
            keys = self._ends[end]
            for key in sorted(keys, key=repr):
                wins = self.windows.get(key)
                if not wins:
                    continue
                for start in sorted(wins):
                    entry = wins[start]
                    if entry[0] == end and not entry[2]:
                        entry[2] = True
                        emit([key, start, end, entry[1]])
                self.windows[key] = wins
        for end in [e for e in self._ends if e + self.lateness <= watermark]:
            for key in self._ends.pop(end):
                wins = self.windows.get(key)
                if wins is None:
                    continue
                for start in [s for s, entry in wins.items() if entry[0] == end]:
                    del wins[start]
                if wins:
                    self.windows[key] = wins
                else:
                    del self.windows[key]
        # ends at or below the watermark have fired and wait to be purged; the rest, to fire
        self._due = min(
            (e if e > watermark else e + self.lateness for e in self._ends), default=math.inf
        )

    def _merge_sessions(self, key: Any, wins: dict[int, list[Any]], start: int) -> int:
        """Merge the session at ``start`` with every session it overlaps; return its start."""
        s, (e, acc, fired) = start, wins.pop(start)
        dropped = {e}
        merged = True
        while merged:
            merged = False
            for other in sorted(wins):
                oe, oacc, ofired = wins[other]
                if other <= e and s <= oe:  # they touch or overlap: one session now
                    del wins[other]
                    dropped.add(oe)
                    acc = self.merge(oacc, acc) if other < s else self.merge(acc, oacc)
                    s, e, fired = min(s, other), max(e, oe), fired or ofired
                    merged = True
                    break
        wm = self.watermark
        # a session that grew past the watermark fires (again) when the watermark gets there
        wins[s] = [e, acc, fired and wm is not None and e <= wm]
        for end in dropped - {e}:
            self._forget(end, key, wins)
        self._ends.setdefault(e, set()).add(key)
        self._due = min(self._due, e)
        return s

    def _forget(self, end: int, key: Any, wins: dict[int, list[Any]]) -> None:
        if any(v[0] == end for v in wins.values()):
            return
        keys = self._ends.get(end)
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._ends[end]


class KeyClockWindows:
    """Tumbling windows on each key's own clock (``clock="key"``; see the module docstring).

    ``windows`` maps key -> ``[start, acc]``, the key's open window (checkpointable: plain
    values). ``reduce(acc, value)`` folds a record in; a window's first record becomes its
    accumulator through ``first`` (default: as it is).
    """

    def __init__(
        self,
        assigner: Tumbling,
        reduce: Reduce,
        *,
        windows: MutableMapping[Any, list[Any]] | None = None,
        first: Callable[[Any], Any] | None = None,
    ) -> None:
        if type(assigner) is not Tumbling:
            raise ValueError(
                f"clock='key' takes tumbling windows only, not {type(assigner).__name__}"
            )
        self.size = assigner.size
        self.reduce = reduce
        self.first = first
        self.windows: MutableMapping[Any, list[Any]] = {} if windows is None else windows

    def add(self, key: Any, ts: int, value: Any, emit: Callable[[list[Any]], None]) -> None:
        """Take one record; emit the window it closes, if any, as ``[key, start, end, acc]``.

        Nothing changes (no emit, no state) when ``reduce`` or ``first`` raises."""
        start = ts - ts % self.size
        entry = self.windows.get(key)
        if entry is not None and entry[0] == start:
            acc = self.reduce(entry[1], value)
        else:
            acc = value if self.first is None else self.first(value)
            if entry is not None:
                emit([key, entry[0], entry[0] + self.size, entry[1]])
        self.windows[key] = [start, acc]
