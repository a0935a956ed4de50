"""The streamlet API's windows: ``WindowConfig`` and the results' ``Window`` and ``KeyedWindow``.

heronpy's ``windowconfig``, ``window`` and ``keyedwindow``. Windows are in
processing time, as in Heron, and take an ``int`` (seconds) or a
``timedelta``; ``WindowConfig._assigner`` and ``_on_slide`` say which DSL
windows (``headwater.common.dsl``'s ``Tumbling``, ``Sliding``) carry one, for
the translation (``_translate.py``). A window operation's results are
``(KeyedWindow(key, Window(start, end)), value)`` (``Window`` bounds in epoch
seconds) for keyed operations and ``(Window(start, end), value)`` for
``reduce_by_window``. They are named tuples: after a hop to another component
they arrive as plain lists.
"""

from __future__ import annotations

import datetime
import math
from collections.abc import Callable
from functools import partial
from typing import Any, NamedTuple

from headwater.common.dsl import Sliding, Tumbling


class Window(NamedTuple):
    start: float
    end: float

    def __repr__(self) -> str:  # Heron's
        return f"Window {{start_time: {_secs(self.start)}, end_time: {_secs(self.end)}}}"


class KeyedWindow(NamedTuple):
    key: Any
    window: Window

    def __repr__(self) -> str:  # Heron's
        return f"KeyedWindow {{key: {self.key}, window: {Window(*self.window)!r}}}"


def _secs(t: float) -> float | int:
    return int(t) if float(t).is_integer() else t


class WindowConfig:
    """A processing-time window: ``create_tumbling_window(10)`` or ``timedelta(seconds=10)``."""

    def __init__(self, window_duration: Any, slide_interval: Any) -> None:
        self._window_duration = _seconds(window_duration, "window duration")
        self._slide_interval = _seconds(slide_interval, "slide interval")

    @staticmethod
    def create_tumbling_window(window_duration: Any) -> WindowConfig:
        return WindowConfig(window_duration, window_duration)

    @staticmethod
    def create_sliding_window(window_duration: Any, slide_interval: Any) -> WindowConfig:
        return WindowConfig(window_duration, slide_interval)

    def _assigner(self) -> Tumbling | Sliding:
        """The DSL's windows; when the duration is no multiple of the slide, windows every
        gcd(duration, slide) seconds, of which ``_on_slide`` keeps those on the slide."""
        size, slide = self._window_duration * 1000, self._slide_interval * 1000
        if size == slide:
            return Tumbling(size)
        return Sliding(size, math.gcd(size, slide))

    def _on_slide(self) -> Callable[[dict[str, Any]], bool] | None:
        size, slide = self._window_duration * 1000, self._slide_interval * 1000
        if size == slide or math.gcd(size, slide) == slide:
            return None
        return partial(_starts_on, slide)


def _starts_on(slide_ms: int, w: dict[str, Any]) -> bool:
    return int(w["start"]) % slide_ms == 0


def _seconds(value: Any, what: str) -> int:
    if isinstance(value, datetime.timedelta):
        if value.microseconds or value.total_seconds() <= 0:
            raise RuntimeError(f"the {what} must be a positive whole number of seconds")
        return int(value.total_seconds())
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return value
    raise RuntimeError(f"the {what} must be a positive int (seconds) or a timedelta, got {value!r}")
