"""Time as a dependency: the coordinators take a ``Clock`` so tests can drive it.

``SystemClock`` reads the monotonic clock (durations, deadlines) and the wall
clock (timestamps shown to people). ``ManualClock`` only moves when a test
calls ``advance``; it is part of the public test kit (``headwater.testing``).
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    def monotonic(self) -> float:
        """Seconds on a clock that never goes back (for durations and deadlines)."""
        ...

    def time(self) -> float:
        """Seconds since the epoch (for timestamps people read)."""
        ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def time(self) -> float:
        return time.time()


SYSTEM_CLOCK = SystemClock()


class ManualClock:
    """A clock that stands still until ``advance`` moves it."""

    def __init__(self, start: float = 1_000.0, wall: float = 1_700_000_000.0) -> None:
        self._now = start
        self._wall_offset = wall - start

    def monotonic(self) -> float:
        return self._now

    def time(self) -> float:
        return self._now + self._wall_offset

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError("a clock never goes back")
        self._now += seconds

    def advance_to(self, monotonic: float) -> None:
        """Move to the monotonic reading ``monotonic`` exactly (not before the current one)."""
        if monotonic < self._now:
            raise ValueError("a clock never goes back")
        self._now = monotonic
