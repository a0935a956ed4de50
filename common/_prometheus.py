"""Prometheus exposition, built at scrape time from the live objects.

A process that serves ``/metrics`` (the master, the topology master of
``headwater run``, an agent's status port) registers one collector in a
``CollectorRegistry`` of its own (never the library's global one) and renders
it on every scrape with ``render``. The collector reads the objects the JSON
API reads (topology masters, node statuses) and turns them into metric
families, so nothing is counted twice: a counter here is the runtime's own
cumulative counter, exposed as it is.

``Families`` collects the samples of one scrape: a family is made on first
use with the label names of that first sample, so two mappings may add to one
family (the cloud's checkpoints and the agents' land in
``headwater_checkpoint_*`` with a ``domain`` label). The mappings themselves
are ``common/control/_prometheus.py`` (topology masters) and
``common/node/_prometheus.py`` (node statuses).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector, CollectorRegistry

__all__ = ["CONTENT_TYPE_LATEST", "Exposition", "Families", "FamilyCollector"]

PREFIX = "headwater_"


class Families:
    """The metric families of one scrape, by name; a family is made on first use."""

    def __init__(self) -> None:
        self._families: dict[str, CounterMetricFamily | GaugeMetricFamily] = {}
        self._labels: dict[str, tuple[str, ...]] = {}

    def counter(self, name: str, doc: str, labels: Mapping[str, str], value: float) -> None:
        """Add a sample of the counter ``headwater_NAME_total`` (``name`` without the suffix)."""
        self._add(name, doc, labels, value, counter=True)

    def gauge(self, name: str, doc: str, labels: Mapping[str, str], value: float) -> None:
        """Add a sample of the gauge ``headwater_NAME``."""
        self._add(name, doc, labels, value, counter=False)

    def _add(
        self, name: str, doc: str, labels: Mapping[str, str], value: float, counter: bool
    ) -> None:
        full = PREFIX + name
        family = self._families.get(full)
        if family is None:
            family = self._families[full] = (CounterMetricFamily if counter else GaugeMetricFamily)(
                full, doc, labels=list(labels)
            )
            self._labels[full] = tuple(labels)
        names = self._labels[full]
        if tuple(labels) != names:  # a mapping's mistake: say which family
            raise ValueError(f"{full} has labels {names}, not {tuple(labels)}")
        family.add_metric([str(labels[k]) for k in names], float(value))

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._families.values())


class FamilyCollector(Collector):
    """A collector whose ``fill(families)`` adds this scrape's samples."""

    def __init__(self, fill: Callable[[Families], None]) -> None:
        self._fill = fill

    def collect(self) -> Iterable[Metric]:
        families = Families()
        self._fill(families)
        return list(families)


class Exposition:
    """A registry of its own for one process's ``/metrics``; ``render`` scrapes it.

    Runs on the thread that owns the objects the collectors read (the event loop).
    """

    content_type = CONTENT_TYPE_LATEST

    def __init__(self, *collectors: Collector) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        for c in collectors:
            self.registry.register(c)

    def render(self) -> bytes:
        """The Prometheus text format of every collector, now."""
        return generate_latest(self.registry)
