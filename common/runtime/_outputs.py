"""What a component emits, acks and fails, and its dead letters: the executor's way out.

Emits go to the ``Emitter`` (routing and batches at the sender). Under
at-least-once a spout's tracked emit gets a root (``pending`` until the
stmgr's acker says it completed or failed) and a bolt's anchored emit
carries its anchors' roots. A record on which a bolt's ``process`` raises is
retried, then dead-lettered on ``__dead_letters`` (``Retry``), anchored to
the tuple being retried; each is reported to the stmgr, bounded.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..api import DEAD_LETTERS, Tuple
from ..api._dead_letters import Retry
from ..wire import column_rows
from ..wire._control import DeadLetterReport, control_frame
from ._emitter import Emitter
from ._hot_keys import HotKeys

log = logging.getLogger("headwater.instance")


@dataclass
class TaskCounters:
    """A task's counters, reported with its metrics (``_instance_metrics``)."""

    executed: int = 0
    acked: int = 0
    failed: int = 0
    exec_ns: int = 0
    exec_count: int = 0
    busy_ns: int = 0  # processing, waits for input and for room included (see report)
    busy_reported: int = 0  # the last busy time reported, less backpressure
    received: int = 0  # tuples delivered from the task's inputs
    hot: HotKeys = field(default_factory=HotKeys)
    stream_emits: dict[str, int] = field(default_factory=dict)
    user_counters: dict[str, int] = field(default_factory=dict)
    started_ns: int = field(default_factory=time.monotonic_ns)  # the counters' clock's zero


class Outputs:
    """One task's emits, acks and fails, its spout's pending roots and its dead letters."""

    def __init__(
        self,
        emitter: Emitter,
        task: int,
        acking: bool,
        spout: bool,
        counts: TaskCounters,
        max_retries: int,
        send: Callable[[bytes], None],
    ) -> None:
        self.emitter = emitter
        self.task = task
        self.acking = acking
        self.spout = spout
        self.counts = counts
        self.send = send
        # spout bookkeeping
        self.next_root = (task << 40) | (int(time.time()) & 0xFFFFFF) << 16
        self.pending: dict[int, Any] = {}
        self.immediate_acks: list[Any] = []
        self.immediate_fails: list[Any] = []
        # poison records: retried, then dead-lettered (anchored to the tuple being retried)
        self.retry = Retry(max_retries, self._dead_letter, log)
        self.anchor: Tuple | None = None

    def emit(
        self,
        values: Sequence[Any],
        stream: str,
        tup_id: Any,
        anchors: Sequence[Tuple] | None,
        direct_task: int | None,
        need_task_ids: bool,
    ) -> list[int] | None:
        vals = values if type(values) is list else list(values)
        roots: list[tuple[int, int]] | None = None
        if self.acking:
            if anchors is not None:
                rooted = [a for a in anchors if a.roots]
                if rooted:
                    seen: dict[tuple[int, int], None] = {}
                    for a in rooted:
                        r = a.roots
                        assert r is not None
                        for i in range(0, len(r), 3):
                            seen[(r[i], r[i + 1])] = None
                    roots = list(seen)
                    anchors = rooted
                else:
                    anchors = None
            elif tup_id is not None and self.spout:
                self.next_root += 1
                root = self.next_root
                self.pending[root] = tup_id
                roots = [(self.task, root)]
        else:
            anchors = None
            if tup_id is not None and self.spout:
                self.immediate_acks.append(tup_id)
        dests = self.emitter.emit(vals, stream, roots, anchors if roots else None, direct_task)
        if roots is not None and not dests and anchors is None:
            # a tracked tuple nobody subscribes to is complete at once; one the
            # emitter had to drop has failed
            del self.pending[roots[0][1]]
            (self.immediate_fails if self.emitter.dropped else self.immediate_acks).append(tup_id)
        self.emitter.dropped = False
        stream_emits = self.counts.stream_emits
        stream_emits[stream] = stream_emits.get(stream, 0) + 1
        return dests if need_task_ids else None

    def emitter_for(self, stream: str) -> Callable[[list[Any]], None]:
        """Context.emitter: untracked emits on ``stream`` without the general path's checks."""
        if self.acking:
            emit = self.emit

            def tracked(values: list[Any]) -> None:
                emit(values, stream, None, None, None, False)

            return tracked
        return self.emitter.unrooted(stream, self.counts.stream_emits)

    def emitter_all_for(self, stream: str) -> Callable[[list[list[Any]]], None]:
        """Context.emitter_all: ``emitter_for``'s emit for a list of records, in order."""
        if self.acking:
            emit = self.emitter_for(stream)

            def tracked(records: list[list[Any]]) -> None:
                for values in records:
                    emit(values)

            return tracked
        return self.emitter.unrooted_all(stream, self.counts.stream_emits)

    def emitter_columns_for(self, stream: str) -> Callable[[list[list[Any]]], None]:
        """Context.emitter_columns: ``emitter_for``'s emit for tuples given as columns."""
        if self.acking:
            emit = self.emitter_for(stream)

            def tracked(cols: list[list[Any]]) -> None:
                for values in column_rows(cols):  # checked before any leaves, as untracked
                    emit(values)

            return tracked
        return self.emitter.unrooted_columns(stream, self.counts.stream_emits)

    def ack(self, tup: Tuple) -> None:
        self.counts.acked += 1
        if self.acking:
            self.emitter.ack(tup)

    def fail(self, tup: Tuple) -> None:
        self.counts.failed += 1
        if self.acking:
            self.emitter.fail(tup)

    # -- poison records -------------------------------------------------------
    def failed(
        self, component: str, process: Callable[[Tuple], None], tup: Tuple, error: Exception
    ) -> None:
        """``process`` raised ``error`` on ``tup``: retry it, then dead-letter it."""
        self.anchor = tup if self.acking and tup.roots else None
        try:
            handled = self.retry(component, lambda: process(tup), error, tup.values)
        finally:
            self.anchor = None
        if not handled and self.acking and tup.roots:
            self.ack(tup)  # its record is in the dead letters: the tree goes on from there

    def _dead_letter(self, component: str, reason: str, tb: str, record: Any) -> None:
        """Emit a dead letter on ``__dead_letters`` (anchored to the failed tuple under
        at-least-once); report it, bounded; with no sink subscribed, the log keeps it."""
        values = [component, reason, tb, record]
        anchors = [self.anchor] if self.anchor is not None else None
        sink = bool(self.emitter.router.selectors(DEAD_LETTERS))
        if sink:
            self.emit(values, DEAD_LETTERS, None, anchors, None, False)
        self.report_dead_letter(component, reason, tb, record, sink)

    def report_dead_letter(
        self, component: str, reason: str, tb: str, record: Any, sink: bool
    ) -> None:
        shown = _shorten(repr(record))
        if self.retry.should_report():
            log.warning(
                "task %d (%s): record dead-lettered%s: %s; record: %s\n%s",
                self.task,
                component,
                "" if sink else " (no dead-letter sink: logged only)",
                reason,
                shown,
                tb,
            )
            report = DeadLetterReport(
                self.task, component, f"dead letter: {reason}; record: {shown}", tb
            )
            self.send(control_frame(report, src=self.task))
        elif not sink:  # nothing else keeps it: log every one
            log.warning(
                "task %d (%s): record dead-lettered: %s; record: %s",
                self.task,
                component,
                reason,
                shown,
            )
        else:
            log.debug("task %d (%s): record dead-lettered: %s", self.task, component, reason)


def _shorten(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} chars)"
