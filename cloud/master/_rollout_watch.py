"""The agents a model rollout watches: which run the component, what they report of it.

A rollout (``_rollout.py``) waits for and watches only the agents of the
topology's deployment that run the component (its placement's selector) and,
for a canary, match the canary selector (``agents``): an agent the component
is not placed on never reports a model. What an agent last reported
(``_nodes.py``) says whether it runs an edit's revision with the version the
entry gives it (``runs``: ``model:T/C`` in its status, see
``edge/_component_status.py``), whether that revision failed on it
(``failed_on``: ``revision_failed:T``), and the component's counters
(``counters``: ``scored``, ``anomalies``, exceptions and dead letters).

``window`` watches agents for a rollout's ``watch_s``, keeping its figures (the
counters' growth and the anomaly rate) and stopping early on errors above its
bound or an agent gone offline; ``verdict`` judges the figures once the time is
up. The watch never imports the rollouts or the master: it is handed the node
registry, the deployments, the component's placement and the agents' revisions
(callbacks), and the rollout by what it watches (``Watched``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from headwater.common.api import Placement

from ._model_package import entry_version
from ._nodes import Nodes

POLL_S = 0.25
"""How often a rollout looks again at what the agents report."""


class Deployed(Protocol):
    """A deployment as the watch sees it: the agents running its edge subgraph."""

    @property
    def agents(self) -> Sequence[str]: ...


class Watched(Protocol):
    """A rollout as the watch sees it: what it watches, its bounds, the figures it keeps."""

    topology: str
    component: str
    watch_s: float
    max_anomaly_rate: float
    max_errors: int
    figures: dict[str, float]


class AgentWatch:
    """What the agents running a topology's component report, and the watch of them.

    ``placement`` gives where a component runs in a topology's current revision
    (None: not known, or the topology is not running); ``agent_revisions`` the
    revision each agent of a topology runs."""

    def __init__(
        self,
        nodes: Nodes,
        deployments: Mapping[str, Deployed],
        placement: Callable[[str, str], Placement | None],
        agent_revisions: Callable[[str], dict[str, int]],
    ) -> None:
        self.nodes, self.deployments = nodes, deployments
        self.placement, self.agent_revisions = placement, agent_revisions

    def agents(self, topology: str, component: str, selector: dict[str, str] | None) -> list[str]:
        """The agents of ``topology`` that run ``component`` (its placement's selector)
        and match ``selector`` (None: all of them): an agent the component is not placed
        on never reports a model, so it is neither waited for nor watched."""
        dep = self.deployments.get(topology)
        placed = self.placement(topology, component)
        out = []
        for agent in dep.agents if dep is not None else []:
            node = self.nodes.records.get(agent)
            labels = dict(node.info.labels) if node is not None else {}
            if placed is not None and not placed.matches(labels):
                continue
            if selector is None or Placement("edge", selector).matches(labels):
                out.append(agent)
        return sorted(out)

    def metrics(self, agent: str) -> dict[str, float]:
        node = self.nodes.records.get(agent)
        return dict(node.status.metrics) if node is not None and node.status is not None else {}

    def online(self, agent: str) -> bool:
        return self.nodes.online(agent)

    def runs(
        self, agent: str, topology: str, component: str, entry: dict[str, Any], revision: int
    ) -> bool:
        """Whether ``agent`` runs ``revision`` (or a later one) with the version ``entry``
        gives it: the version alone may be the same before the revision (an agent the
        canary leaves on the default) while its replace is still under way."""
        if self.agent_revisions(topology).get(agent, 0) < revision:
            return False
        node = self.nodes.records.get(agent)
        labels = dict(node.info.labels) if node is not None else {}
        canary = entry.get("canary")
        key = (
            "canary"
            if canary and Placement("edge", canary["selector"]).matches(labels)
            else "default"
        )
        live = self.metrics(agent).get(f"model:{topology}/{component}")
        return live is not None and int(live) == entry_version(entry, key)

    def failed_on(self, topology: str, revision: int, agents: list[str]) -> str:
        """Why ``revision`` failed on one of ``agents`` (its replace rolled back), or ""."""
        for a in agents:
            if self.metrics(a).get(f"revision_failed:{topology}", 0.0) >= revision:
                return f"revision {revision} failed on agent {a} (its replace rolled back)"
        return ""

    def counters(self, topology: str, component: str, agents: list[str]) -> dict[str, float]:
        prefix = f"component:{topology}/{component}:"
        total = {"scored": 0.0, "anomalies": 0.0, "errors": 0.0}
        for a in agents:
            m = self.metrics(a)
            total["scored"] += m.get(prefix + "user:scored", 0.0)
            total["anomalies"] += m.get(prefix + "user:anomalies", 0.0)
            total["errors"] += m.get(prefix + "exceptions", 0.0) + m.get(
                prefix + "dead_letters", 0.0
            )
        return total

    async def window(
        self,
        r: Watched,
        agents: list[str],
        sleep: Callable[[float], Awaitable[None]],
        clock: Callable[[], float],
    ) -> str:
        """Watch ``agents`` for ``r.watch_s`` (by the rollouts' ``sleep`` and ``clock``),
        keeping ``r.figures``: why it stopped early (errors above the bound, an agent
        offline), "" once the time is up."""
        start = self.counters(r.topology, r.component, agents)
        end_at = clock() + r.watch_s
        while True:
            now = self.counters(r.topology, r.component, agents)
            # a container that restarted starts its counters again: count from zero
            delta = {k: now[k] - start[k] if now[k] >= start[k] else now[k] for k in now}
            rate = delta["anomalies"] / delta["scored"] if delta["scored"] else 0.0
            r.figures = {**delta, "anomaly_rate": round(rate, 6)}
            if delta["errors"] > r.max_errors:
                return f"{delta['errors']:.0f} errors (at most {r.max_errors})"
            offline = [a for a in agents if not self.online(a)]
            if offline:
                return f"{', '.join(offline)} went offline"
            if clock() >= end_at:
                return ""
            await sleep(POLL_S)

    def verdict(self, r: Watched) -> str:
        """What the figures of a watch that ran its time say: "" within bounds, else why not."""
        scored, anomalies = r.figures["scored"], r.figures["anomalies"]
        rate = anomalies / scored if scored else 0.0
        if not scored:
            return f"the watched agents scored no reading in {r.watch_s:.0f} s: nothing to judge by"
        if rate > r.max_anomaly_rate:
            return f"anomaly rate {rate:.3f} above {r.max_anomaly_rate}"
        return ""
