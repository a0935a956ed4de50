"""The agents a model rollout watches: which run the component, what they report of it.

A rollout (``_rollout.py``) waits for and watches only the agents of the
topology's deployment that run the component (its placement's selector) and,
for a canary, match the canary selector (``agents``): an agent the component
is not placed on never reports a model. What an agent last reported
(``_nodes.py``) says whether it runs an edit's revision with the version the
entry gives it (``runs``: ``model:T/C`` in its status, see
``edge/_component_status.py``), whether that revision failed on it
(``failed_on``: ``revision_failed:T``), and the component's counters
(``counters``: executed, emitted, exceptions, dead letters, their sum
``errors``, and each user counter by its name).

``window`` watches agents for a rollout's ``watch_s``, keeping its figures (the
counters' growth, and the anomaly rate when the component counts anomalies)
and stopping early on a plain counter above its guard's bound or an agent gone
offline; the rollout judges the figures by its guards once the time is up
(``_rollout_guards.judge``). The watch never imports the rollouts or the
master: it is handed the node registry, the deployments, the component's
placement and the agents' revisions (callbacks), and the rollout by what it
watches (``Watched``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, Protocol

from headwater.common.api import Placement
from headwater.common.models._rollout_guards import BUILT_IN, early
from headwater.common.plan._package_models import pick

from ._nodes import Nodes

POLL_S = 0.25
"""How often a rollout looks again at what the agents report."""


class Deployed(Protocol):
    """A deployment as the watch sees it: the agents running its edge subgraph."""

    @property
    def agents(self) -> Sequence[str]: ...


class Watched(Protocol):
    """A rollout as the watch sees it: what it watches, its guards, the figures it keeps."""

    topology: str
    component: str
    watch_s: float
    guards: list[str]
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
        chosen = pick(entry, labels, agent)
        live = self.metrics(agent).get(f"model:{topology}/{component}")
        return live is not None and int(live) == (chosen["version"] if chosen else 0)

    def failed_on(self, topology: str, revision: int, agents: list[str]) -> str:
        """Why ``revision`` failed on one of ``agents`` (its replace rolled back), or ""."""
        for a in agents:
            if self.metrics(a).get(f"revision_failed:{topology}", 0.0) >= revision:
                return f"revision {revision} failed on agent {a} (its replace rolled back)"
        return ""

    def counters(self, topology: str, component: str, agents: list[str]) -> dict[str, float]:
        """The component's counters summed over ``agents``: the built-in ones (and
        ``errors``, exceptions + dead letters) and each user counter by its name."""
        prefix = f"component:{topology}/{component}:"
        total = {name: 0.0 for name in BUILT_IN}
        for a in agents:
            for key, value in self.metrics(a).items():
                if not key.startswith(prefix):
                    continue
                name = key[len(prefix) :]
                if name.startswith("user:"):
                    name = name[len("user:") :]
                    if name in BUILT_IN:  # a user counter never hides a built-in one
                        continue
                total[name] = total.get(name, 0.0) + value
        total["errors"] = total["exceptions"] + total["dead_letters"]
        return total

    async def window(
        self,
        r: Watched,
        agents: list[str],
        sleep: Callable[[float], Awaitable[None]],
        clock: Callable[[], float],
    ) -> str:
        """Watch ``agents`` for ``r.watch_s`` (by the rollouts' ``sleep`` and ``clock``),
        keeping ``r.figures`` (the counters' growth): why it stopped early (a plain
        counter above its guard's bound, an agent offline), "" once the time is up."""
        start = self.counters(r.topology, r.component, agents)
        end_at = clock() + r.watch_s
        while True:
            now = self.counters(r.topology, r.component, agents)
            # a container that restarted starts its counters again: count from zero
            delta = {
                k: v - start.get(k, 0.0) if v >= start.get(k, 0.0) else v for k, v in now.items()
            }
            if "scored" in delta and "anomalies" in delta:
                rate = delta["anomalies"] / delta["scored"] if delta["scored"] else 0.0
                delta["anomaly_rate"] = round(rate, 6)
            r.figures = delta
            why = early(r.guards, delta)
            if why:
                return why
            offline = [a for a in agents if not self.online(a)]
            if offline:
                return f"{', '.join(offline)} went offline"
            if clock() >= end_at:
                return ""
            await sleep(POLL_S)
