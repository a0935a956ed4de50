"""What an agent tells the master of its edge components, for a model rollout to watch.

Added to the agent's ``NodeStatus.metrics`` (``Agent.status``), per edge
subgraph ``T`` and component ``C``:

- ``component:T/C:emitted``, ``:executed``, ``:exceptions``, ``:dead_letters`` and each user
  counter as ``:user:NAME``: summed over the component's tasks, cumulative
  (the stream manager folds a restarted task's counters in, so they never go
  back while the container lives);
- ``model:T/C``: the model version the running revision gives this agent
  (0: the component's own logic), for components that carry a models entry,
  reported once no edit is under way (so a version shows once it runs);
- ``revision_failed:T``: the newest revision that was refused or rolled back
  here (0: none), so that the master learns that a replace failed on this agent;
- for the master's health manager, each edge task's own counters, as the cloud's
  tasks report theirs to the master: ``edge_task:T/C/ID:KEY`` (``ID``: its task id
  in the subgraph's plan; ``KEY``: ``executed``, ``emitted``, ``received``,
  ``busy_ns``, ``backpressure_ms``, ``in_queue_frames``), for a task that has
  reported, and ``edge_tasks:T``, how many tasks the subgraph's plan has.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from headwater.common.control import TopologyMaster
from headwater.common.plan._package_models import MODEL_CONFIG, pick
from headwater.common.wire._states import RevisionStatus

_SUMMED = ("emitted", "executed", "exceptions", "dead_letters")
TASK_KEYS = ("executed", "emitted", "received", "busy_ns", "backpressure_ms", "in_queue_frames")


def component_metrics(
    name: str, tm: TopologyMaster, labels: Mapping[str, str], agent: str = ""
) -> dict[str, float]:
    """The metrics above for the edge subgraph ``name`` run by ``tm`` on the agent ``agent``
    with ``labels`` (which pick its model version)."""
    out: dict[str, float] = {}
    for inst in tm.plan.instances:
        m = tm.metrics.get(f"task:{inst.task_id}", {})
        prefix = f"component:{name}/{inst.component}:"
        for k, v in m.items():
            if k in _SUMMED or k.startswith("user:"):
                out[prefix + k] = out.get(prefix + k, 0.0) + v
        if "executed" in m:  # reported: a task starting is left out, as the cloud's are
            task = f"edge_task:{name}/{inst.component}/{inst.task_id}:"
            out.update({task + k: float(m.get(k, 0.0)) for k in TASK_KEYS})
    out[f"edge_tasks:{name}"] = float(len(tm.plan.instances))
    if tm.edit is None:
        for c in tm.topology.components:
            entry = c.config.get(MODEL_CONFIG)
            if entry:
                chosen = pick(json.loads(entry), labels, agent)
                out[f"model:{name}/{c.name}"] = float(chosen["version"] if chosen else 0)
    failed = [
        r.revision
        for r in tm.revlog.records
        if r.status in (RevisionStatus.REFUSED, RevisionStatus.ROLLED_BACK)
    ]
    out[f"revision_failed:{name}"] = float(max(failed, default=0))
    return out
