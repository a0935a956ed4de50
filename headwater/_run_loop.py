"""Run until stopped: what ``headwater run`` and ``headwater demo`` share between their
start and their stop (Ctrl-C, SIGTERM, a duration, a crash loop)."""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from headwater.common._exceptions import HeadwaterError, StartupStopped


@contextlib.contextmanager
def _unraised_stops_unsaid() -> Iterator[None]:
    """A Ctrl-C's ``StartupStopped`` raised where Python cannot propagate it (an at-fork hook
    as a child is forked, a ``__del__``, a weak reference's callback) is dropped without the
    "Exception ignored" report: the stop is recorded all the same, and the start-up, which
    then goes on, ends in it as soon as it returns. Any other such exception is reported as
    before."""
    before = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, StartupStopped):
            before(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        sys.unraisablehook = before


def run_until_stopped(
    start: Callable[[], None],
    stop: Callable[[], None],
    duration: float | None,
    tick: Callable[[], None],
    report: Callable[[], None] | None,
    final: Callable[[], None],
    announce: Callable[[], None] = lambda: None,
) -> int:
    """Start, ``announce`` it, then tick until Ctrl-C, SIGTERM or ``duration``; report every
    5 s; stop. A Ctrl-C once ``start`` returned (its processes may be at work already) is a
    stop after the start-up, even while ``announce`` prints.

    A ``HeadwaterError`` from ``tick`` (a crash loop) is printed at once, everything
    is stopped, and the exit status is 1. Ctrl-C or SIGTERM during ``start`` interrupts
    it (``StartupStopped``): what had started is stopped, the last line says so, and the
    exit status is 0, as for a stop after the start-up. A start that fails once a stop
    came (a child process ended by the same Ctrl-C) is that stop, not an error."""
    stopping = {"signal": 0}
    starting = [True]
    code = 0

    def on_signal(signum: int, frame: object) -> None:
        stopping["signal"] = signum
        if starting[0]:  # once: a second Ctrl-C while it stops only asks again
            starting[0] = False
            raise StartupStopped(signum)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    early = False
    try:
        try:
            with _unraised_stops_unsaid():
                start()
            starting[0] = False
            early = bool(stopping["signal"])  # its StartupStopped was dropped: see below
            if not early:
                announce()
        except StartupStopped:
            early = True
        except Exception:
            starting[0] = False
            if not stopping["signal"]:
                raise
            early = True
        began = time.monotonic()
        next_report = began + 5.0
        while not early and not stopping["signal"]:
            now = time.monotonic()
            if duration is not None and now - began >= duration:
                break
            try:
                tick()
            except HeadwaterError as exc:
                print(f"headwater: error: {exc}", file=sys.stderr, flush=True)
                code = 1
                break
            if report is not None and now >= next_report:
                with contextlib.suppress(OSError):
                    report()
                next_report = now + 5.0
            time.sleep(0.1)
        if not code and not early:
            with contextlib.suppress(OSError):
                final()
    finally:
        starting[0] = False
        print("stopping...", flush=True)
        stop()
        for s, h in old.items():
            signal.signal(s, h)
    print("stopped during start-up" if early else "stopped", flush=True)
    return code
