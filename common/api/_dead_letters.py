"""Poison records: a record on which user code raises is retried, then dead-lettered.

One ``Retry`` per instance. The instance calls it when a bolt's ``process``
raises on a record; the DSL's fused steps call it (``Context.retry_record``)
when their function raises. It runs the record again up to
``topology.record.max.retries`` times, at once and on the same thread; a
``DeadLetter`` exception skips the retries. If every attempt raises, the
record goes to ``dead_letter`` (the instance emits it on the component's
``__dead_letters`` stream) and processing goes on with the next record.

An ``OSError`` (``ConnectionError``, ``TimeoutError``, a full disk) is the
environment's fault, not the record's: it is raised on, the instance ends and
restarts as before, and the record is replayed (at least once, exactly once)
instead of being dead-lettered while a database is briefly down.

A retry runs the record again from the step that raised (a DSL step) or from
the start of ``process`` (a bolt): what the failed attempt did before raising
(state written, tuples emitted) is not undone, so user code that can fail
should raise before it changes anything, as a pure function does.

Reports are bounded: the first ``BURST`` dead letters of an instance are
logged at WARNING and reported (to ``/exceptions``), then at most one per
``QUIET_S`` seconds (the others at DEBUG); ``dead_letters`` and
``record_retries`` count every one.
"""

from __future__ import annotations

import logging
import time
import traceback
from collections.abc import Callable
from typing import Any

from .._exceptions import DeadLetter

DeadLetterSink = Callable[[str, str, str, Any], None]  # component, reason, traceback, record

TRACEBACK_FRAMES = 5  # the innermost frames a dead letter keeps
TRACEBACK_CHARS = 2000
BURST = 10
QUIET_S = 1.0


def reason_of(error: BaseException) -> str:
    """What a dead letter says went wrong: ``Type: message`` (a ``DeadLetter``: its message)."""
    if isinstance(error, DeadLetter):
        return str(error)
    return f"{type(error).__name__}: {error}"


def short_traceback(error: BaseException) -> str:
    """The innermost frames only (a RecursionError has a thousand), at most 2000 chars."""
    if isinstance(error, DeadLetter):
        return ""
    text = "".join(traceback.format_exception(error, limit=-TRACEBACK_FRAMES, chain=False))
    return text if len(text) <= TRACEBACK_CHARS else "..." + text[-TRACEBACK_CHARS:]


class Retry:
    """Retries a failed record, then dead-letters it. Executor thread only."""

    def __init__(
        self,
        max_retries: int,
        dead_letter: DeadLetterSink,
        log: logging.Logger,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_retries = max_retries
        self.dead_letter = dead_letter
        self.log = log
        self.clock = clock
        self.retries = 0
        self.dead_letters = 0
        self._reported = 0
        self._quiet_until = 0.0

    def __call__(
        self, component: str, attempt: Callable[[], Any], error: Exception, record: Any
    ) -> bool:
        """``attempt`` raised ``error`` on ``record``: try again; True if an attempt worked.

        False: every attempt raised and the record was dead-lettered."""
        tries = 0
        while tries < self.max_retries and not isinstance(error, DeadLetter):
            if isinstance(error, OSError):
                raise error  # the environment's fault, not the record's: restart, replay
            tries += 1
            self.retries += 1
            try:
                attempt()
                return True
            except Exception as exc:
                error = exc
        if isinstance(error, OSError):
            raise error
        self.dead_letters += 1
        reason, tb = reason_of(error), short_traceback(error)
        self.dead_letter(component, reason, tb, record)
        return False

    def should_report(self) -> bool:
        """Whether this dead letter is logged at WARNING and reported (bounded)."""
        now = self.clock()
        if self._reported < BURST or now >= self._quiet_until:
            self._reported += 1
            self._quiet_until = now + QUIET_S if self._reported >= BURST else 0.0
            return True
        return False
