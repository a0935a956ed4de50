"""heronpy's metric classes (``heronpy.api.metrics``).

Register one with ``context.register_metric(name, metric, time_bucket_in_sec)``; it
is reported with the task's metrics as ``user:<name>`` (a multi-metric as
``user:<name>/<key>``), so the API's component metrics sum it over tasks.
``CountMetric`` and ``MultiCountMetric`` report every increment at once (exact
totals); the others are read with ``get_value_and_reset()`` every time bucket and
report their latest value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Sink = Callable[[str, float], None]  # (key within the metric, amount to add)


class IMetric:
    """A metric: ``get_value_and_reset()`` returns what accumulated since the last call."""

    def get_value_and_reset(self) -> Any:
        raise NotImplementedError(f"{type(self).__qualname__} must implement get_value_and_reset()")


class CountMetric(IMetric):
    def __init__(self) -> None:
        self.value = 0
        self._sink: Sink | None = None

    def incr(self, to_add: int = 1) -> None:
        self.value += to_add
        if self._sink is not None:
            self._sink("", to_add)

    def get_value_and_reset(self) -> int:
        value, self.value = self.value, 0
        return value


class MultiCountMetric(IMetric):
    """A ``CountMetric`` per key."""

    def __init__(self) -> None:
        self.value: dict[str, CountMetric] = {}
        self._sink: Sink | None = None

    def add_key(self, key: str) -> None:
        self.incr(key, to_add=0)

    def incr(self, key: str, to_add: int = 1) -> None:
        metric = self.value.get(key)
        if metric is None:
            metric = self.value[key] = CountMetric()
        metric.value += to_add
        if self._sink is not None:
            self._sink(key, to_add)

    def get_value_and_reset(self) -> dict[str, int]:
        return {key: m.get_value_and_reset() for key, m in self.value.items()}


class IReducer:
    """``init()`` to start over, ``reduce(value)`` per value, ``extract()`` for the result."""

    def init(self) -> None:
        raise NotImplementedError

    def reduce(self, value: Any) -> None:
        raise NotImplementedError

    def extract(self) -> Any:
        raise NotImplementedError


class MeanReducer(IReducer):
    def init(self) -> None:
        self.sum = 0.0
        self.count = 0

    def reduce(self, value: Any) -> None:
        self.sum += float(value)
        self.count += 1

    def extract(self) -> float | None:
        return self.sum / self.count if self.count else None


class ReducedMetric(IMetric):
    """Values folded by a reducer (a class) between two reads."""

    def __init__(self, reducer_cls: type[IReducer]) -> None:
        self.reducer = reducer_cls()
        self.reducer.init()

    def update(self, value: Any) -> None:
        self.reducer.reduce(value)

    def get_value_and_reset(self) -> Any:
        value = self.reducer.extract()
        self.reducer.init()
        return value


class MultiReducedMetric(IMetric):
    """A ``ReducedMetric`` per key."""

    def __init__(self, reducer: type[IReducer]) -> None:
        self.reducer = reducer
        self.value: dict[str, ReducedMetric] = {}

    def add_key(self, key: str) -> None:
        if key not in self.value:
            self.value[key] = ReducedMetric(self.reducer)

    def update(self, key: str, value: Any) -> None:
        self.add_key(key)
        self.value[key].update(value)

    def get_value_and_reset(self) -> dict[str, Any]:
        return {key: m.get_value_and_reset() for key, m in self.value.items()}


class AssignableMetrics(IMetric):
    """The last value set; reading does not reset it."""

    def __init__(self, init_val: Any) -> None:
        self.value = init_val

    def update(self, value: Any) -> None:
        self.value = value

    def get_value_and_reset(self) -> Any:
        return self.value


class MultiAssignableMetrics(IMetric):
    def __init__(self) -> None:
        self.map: dict[str, AssignableMetrics] = {}

    def update(self, key: str, value: Any) -> None:
        if key in self.map:
            self.map[key].update(value)
        else:
            self.map[key] = AssignableMetrics(value)

    def get_value_and_reset(self) -> dict[str, Any]:
        return {key: m.get_value_and_reset() for key, m in self.map.items()}


def MeanReducedMetric() -> ReducedMetric:
    return ReducedMetric(MeanReducer)


def MultiMeanReducedMetric() -> MultiReducedMetric:
    return MultiReducedMetric(MeanReducer)


__all__ = [
    "AssignableMetrics",
    "CountMetric",
    "IMetric",
    "IReducer",
    "MeanReducedMetric",
    "MeanReducer",
    "MultiAssignableMetrics",
    "MultiCountMetric",
    "MultiMeanReducedMetric",
    "MultiReducedMetric",
    "ReducedMetric",
]
