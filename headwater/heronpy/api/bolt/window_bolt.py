"""heronpy's windowed bolts: ``SlidingWindowBolt`` and ``TumblingWindowBolt``.

Processing-time windows, as in heronpy: a tuple belongs to the windows open when
it arrives (whole seconds of the wall clock). Override ``processWindow(window_info,
tuples)`` (or ``process_window``), called on every slide (sliding) or at the end of
every window (tumbling) with ``WindowContext(start, end)`` and the window's tuples.

Acking, as Heron does: a tumbling bolt acks a window's tuples right after its
``processWindow``; a sliding bolt acks each tuple when it expires, i.e. once it has
left the last window that holds it. Under exactly-once the buffered tuples are part
of the checkpoint (``pre_save``).

The window duration (and slide interval) come from the component config given to
``spec()`` / ``add_bolt``; ``spec()`` also sets the component's tick interval to the
slide, which is how heronpy's ``initialize`` arranges its timer.

Count windows, as in Heron's Java API (heronpy's window bolts are by time only), are
an extension: ``WINDOW_COUNT`` (and for sliding ``WINDOW_SLIDE_COUNT``) instead of the
durations; a window is processed every slide of tuples, with the last ``WINDOW_COUNT``
of them, and a tuple is acked once no window to come holds it (a tumbling window's
right after it is processed). ``WindowContext`` then spans the arrival of its oldest
tuple to now.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from headwater.common.api import Tuple
from headwater.common.api._state import StatefulComponent

from ..api_constants import TOPOLOGY_TICK_TUPLE_FREQ_SECS
from ..component.component_spec import HeronComponentSpec
from ..stream import Stream
from .bolt import Bolt


class WindowContext(NamedTuple):
    start: int
    end: int


def _positive(config: Mapping[str, Any], key: str, cls: str) -> int:
    try:
        value = int(config[key])
    except KeyError:
        raise ValueError(f"{cls}: the config must set {key!r}") from None
    except (TypeError, ValueError):
        raise ValueError(f"{cls}: {key!r} must be a whole number") from None
    if value <= 0:
        raise ValueError(f"{cls}: {key!r} must be positive, got {value}")
    return value


def _saved(tup: Tuple) -> list[Any]:
    return [tup.component, tup.stream, tup.task, list(tup.values), tup.creation_time]


def _restored(row: Sequence[Any]) -> Tuple:
    component, stream, task, values, created = row
    return Tuple(None, component, stream, task, list(values), created)


class _WindowBolt(Bolt, StatefulComponent):
    _now = staticmethod(time.time)  # the clock windows read (whole seconds, as in Heron)
    WINDOW_DURATION_SECS: str  # config key of a time window's duration
    WINDOW_COUNT: str  # config key of a count window's size (an extension, see the module)

    def process_window(self, window_info: WindowContext, tuples: list[Tuple]) -> None:
        raise NotImplementedError(f"{type(self).__qualname__} must implement processWindow()")

    def processWindow(self, window_info: WindowContext, tuples: list[Tuple]) -> None:
        """heronpy's name; the default calls ``process_window``."""
        self.process_window(window_info, tuples)

    def init_state(self, stateful_state: Any) -> None:
        self.saved_state = stateful_state

    def pre_save(self, checkpoint_id: Any) -> None:
        self.saved_state["tuples"] = [[_saved(t), tm] for t, tm in self.current_tuples]
        self.saved_state["arrivals"] = self._arrivals

    @classmethod
    def _time_sizes(cls, config: Mapping[str, Any]) -> tuple[int, int]:
        raise NotImplementedError

    @classmethod
    def _count_sizes(cls, config: Mapping[str, Any]) -> tuple[int, int]:
        raise NotImplementedError

    @classmethod
    def _sizes(cls, config: Mapping[str, Any]) -> tuple[bool, int, int]:
        """(count window?, size, slide), in seconds or tuples."""
        if cls.WINDOW_COUNT not in config:
            return (False, *cls._time_sizes(config))
        if any(
            k.startswith(cls.WINDOW_COUNT.split("_")[0]) and k.endswith("_secs") for k in config
        ):
            raise ValueError(f"{cls.__qualname__}: give a time window or a count window, not both")
        size, slide = cls._count_sizes(config)
        if slide > size:
            raise ValueError(
                f"{cls.__qualname__}: the slide ({slide} tuples) must not exceed the "
                f"window ({size} tuples)"
            )
        return True, size, slide

    @classmethod
    def spec(
        cls,
        name: str | None = None,
        inputs: Any = None,
        par: int = 1,
        config: Mapping[str, Any] | None = None,
        optional_outputs: Sequence[Stream | str] | None = None,
    ) -> HeronComponentSpec:
        merged = dict(config or {})
        by_count, _, slide = cls._sizes(merged)
        if not by_count:  # the timer that closes time windows
            merged[TOPOLOGY_TICK_TUPLE_FREQ_SECS] = slide
        return super().spec(name, inputs, par, merged, optional_outputs)

    def initialize(self, config: dict[str, Any], context: Any) -> None:
        self.by_count, size, slide = self._sizes(config)
        if self.by_count:
            self.window_count, self.slide_count = size, slide
        else:
            self.window_duration, self.slide_interval = size, slide
        self.current_tuples: deque[tuple[Tuple, int]] = deque()
        self._arrivals = 0  # count windows: tuples so far
        saved = getattr(self, "saved_state", None)
        if saved is not None and "tuples" in saved:
            self.current_tuples.extend((_restored(t), tm) for t, tm in saved["tuples"])
            self._arrivals = int(saved.get("arrivals", 0))

    def _process_counted(self, tup: Tuple) -> None:
        """A count window: every ``slide_count`` tuples, the last ``window_count``; a tuple is
        acked once no window to come holds it."""
        now = int(self._now())
        self._arrivals += 1
        self.current_tuples.append((tup, now))
        if self._arrivals % self.slide_count == 0:
            window = WindowContext(self.current_tuples[0][1], now)
            self.processWindow(window, [t for t, _ in self.current_tuples])
        next_window = (self._arrivals // self.slide_count + 1) * self.slide_count
        oldest = self._arrivals - len(self.current_tuples) + 1
        while self.current_tuples and oldest <= next_window - self.window_count:
            self.ack(self.current_tuples.popleft()[0])
            oldest += 1


class SlidingWindowBolt(_WindowBolt):
    """Windows of ``WINDOW_DURATION_SECS`` every ``WINDOW_SLIDEINTERVAL_SECS`` (default:
    the duration) seconds; or, by count, of ``WINDOW_COUNT`` tuples every
    ``WINDOW_SLIDE_COUNT`` (default: the count) tuples."""

    WINDOW_DURATION_SECS = "slidingwindowbolt_duration_secs"
    WINDOW_SLIDEINTERVAL_SECS = "slidingwindowbolt_slideinterval_secs"
    WINDOW_COUNT = "slidingwindowbolt_count"
    WINDOW_SLIDE_COUNT = "slidingwindowbolt_slide_count"

    @classmethod
    def _time_sizes(cls, config: Mapping[str, Any]) -> tuple[int, int]:
        duration = _positive(config, cls.WINDOW_DURATION_SECS, cls.__qualname__)
        slide = duration
        if cls.WINDOW_SLIDEINTERVAL_SECS in config:
            slide = _positive(config, cls.WINDOW_SLIDEINTERVAL_SECS, cls.__qualname__)
        if slide > duration:
            raise ValueError(
                f"{cls.__qualname__}: the slide interval ({slide}s) must not exceed "
                f"the window duration ({duration}s)"
            )
        return duration, slide

    @classmethod
    def _count_sizes(cls, config: Mapping[str, Any]) -> tuple[int, int]:
        size = _positive(config, cls.WINDOW_COUNT, cls.__qualname__)
        if cls.WINDOW_SLIDE_COUNT not in config:
            return size, size
        return size, _positive(config, cls.WINDOW_SLIDE_COUNT, cls.__qualname__)

    def process(self, tup: Tuple) -> None:
        if self.by_count:
            self._process_counted(tup)
            return
        now = int(self._now())
        self.current_tuples.append((tup, now))
        self._expire(now)

    def _expire(self, now: int) -> None:
        while self.current_tuples and now - self.window_duration > self.current_tuples[0][1]:
            tup, _ = self.current_tuples.popleft()
            self.ack(tup)

    def process_tick(self, tup: Tuple) -> None:
        if self.by_count:
            return
        now = int(self._now())
        window = WindowContext(now - self.window_duration, now)
        self.processWindow(window, [t for t, _ in self.current_tuples])
        self._expire(now)


class TumblingWindowBolt(_WindowBolt):
    """Back-to-back windows of ``WINDOW_DURATION_SECS`` seconds, or of ``WINDOW_COUNT``
    tuples."""

    WINDOW_DURATION_SECS = "tumblingwindowbolt_duration_secs"
    WINDOW_COUNT = "tumblingwindowbolt_count"

    @classmethod
    def _time_sizes(cls, config: Mapping[str, Any]) -> tuple[int, int]:
        duration = _positive(config, cls.WINDOW_DURATION_SECS, cls.__qualname__)
        return duration, duration

    @classmethod
    def _count_sizes(cls, config: Mapping[str, Any]) -> tuple[int, int]:
        size = _positive(config, cls.WINDOW_COUNT, cls.__qualname__)
        return size, size

    def process(self, tup: Tuple) -> None:
        if self.by_count:
            self._process_counted(tup)
        else:
            self.current_tuples.append((tup, int(self._now())))

    def process_tick(self, tup: Tuple) -> None:
        if self.by_count:
            return
        now = int(self._now())
        window = WindowContext(now - self.window_duration, now)
        self.processWindow(window, [t for t, _ in self.current_tuples])
        for t, _ in self.current_tuples:
            self.ack(t)
        self.current_tuples.clear()


__all__ = ["SlidingWindowBolt", "TumblingWindowBolt", "WindowContext"]
