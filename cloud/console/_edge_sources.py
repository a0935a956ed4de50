"""The history's edge sources on the master: each agent's figures of a topology's edge components.

An agent reports its edge subgraphs' counters in its status (every 2 s), summed per
component (``component:NAME/C:executed`` ...) and per task (``edge_task:NAME/C/T:...``:
backpressure, queued frames). Read here as ``common/console/_history.py``'s ``Source``s,
stamped with the report's arrival; a status is parsed once, however many ticks read it,
and each distinct key once.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from headwater.common.console._history import COUNTERS, Source
from headwater.common.wire.proto import runtime_pb2 as pb

if TYPE_CHECKING:
    from headwater.cloud.master._master import Master

Parsed = dict[str, dict[str, dict[str, float]]]  # topology -> component -> metric -> value
MAX_KEYS = 100_000
"""The most status keys whose parse is kept (the same keys come in every report, from
every agent running the same topology); past it, the memo starts again."""


class EdgeSources:
    """``EdgeSources(master)(name)``: the sources of topology ``name``'s edge components."""

    def __init__(self, master: Master) -> None:
        self.master = master
        self._parsed: dict[str, tuple[pb.NodeStatus, Parsed]] = {}  # agent -> (status, parsed)
        self._keys: dict[str, tuple[str, str, str] | tuple[()]] = {}  # a key -> its parse

    def __call__(self, name: str) -> Iterator[Source]:
        dep = self.master.deployments.get(name)
        agents = set(dep.agents) if dep is not None else set()
        for agent in [a for a in self._parsed if a not in self.master.nodes.records]:
            del self._parsed[agent]  # forgotten nodes
        for agent in sorted(agents):
            record = self.master.nodes.records.get(agent)
            if record is None or record.status is None:
                continue
            for component, m in self._of(agent, record.status).get(name, {}).items():
                yield Source(
                    ("agent", agent, component),
                    component,
                    None,
                    record.last_seen,
                    tuple(m.get(k, 0.0) for k in COUNTERS),
                    (0.0, m.get("in_queue_frames", 0.0)),
                )

    def _of(self, agent: str, status: pb.NodeStatus) -> Parsed:
        cached = self._parsed.get(agent)
        if cached is not None and cached[0] is status:
            return cached[1]
        out: Parsed = {}
        for key, value in status.metrics.items():
            where = self._keys.get(key)
            if where is None:
                if len(self._keys) >= MAX_KEYS:
                    self._keys.clear()
                where = self._keys[key] = _parse(key)
            if where:
                figures = out.setdefault(where[0], {}).setdefault(where[1], {})
                figures[where[2]] = figures.get(where[2], 0.0) + value
        self._parsed[agent] = (status, out)
        return out


def _parse(key: str) -> tuple[str, str, str] | tuple[()]:
    """(topology, component, metric) of a status key the history reads, else ()."""
    kind, _, rest = key.partition(":")
    where, _, metric = rest.rpartition(":")
    if ":" in where:  # user:... counters
        return ()
    if kind == "component" and metric in COUNTERS:
        topology, _, component = where.partition("/")
        return topology, component, metric
    if kind == "edge_task" and metric in ("backpressure_ms", "in_queue_frames"):
        topology, _, task = where.partition("/")  # NAME/C/T: summed per component
        return topology, task.rpartition("/")[0], metric
    return ()
