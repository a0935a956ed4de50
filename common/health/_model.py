"""What the health manager reads and what it decides: samples, policy, diagnoses, actions.

A ``Sample`` is one reading of a topology's metrics: per task its cumulative counters (as
the topology master's ``/metrics`` view gives them) and per component what the plan says
(parallelism, inputs and their groupings). Rates are differences between two samples, so
the manager keeps the previous one; counters never go back (a restarted task's totals are
folded in by its stream manager).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Mode(StrEnum):
    """What the health manager may do for a topology."""

    OFF = "off"  # nothing is measured for decisions, nothing proposed
    RECOMMEND = "recommend"  # diagnoses and proposed actions only: nothing changes
    AUTO = "auto"  # the actions are applied as live edits


@dataclass(frozen=True)
class TaskSample:
    """One task's cumulative counters at one moment (the instance's metrics report)."""

    task: int
    component: str
    executed: float = 0.0  # tuples processed (a spout: emitted roots)
    emitted: float = 0.0
    received: float = 0.0  # tuples delivered to its input queue
    busy_ns: float = 0.0  # time processing: not waiting for input nor for backpressure
    backpressure_ms: float = 0.0  # time its own output was blocked (its outbox full)
    in_queue_frames: float = 0.0  # a gauge: frames waiting at its input now
    hot_keys: tuple[tuple[str, float], ...] = ()  # (key, share of the task's sampled input)
    at: float | None = None  # when these were read, if not at the sample's time (an agent's)
    uptime_ns: float = 0.0  # the task's own clock, read with its counters (0: not reported)


@dataclass(frozen=True)
class ComponentInfo:
    """A component as the running revision's plan has it."""

    name: str
    parallelism: int
    inputs: tuple[tuple[str, str], ...] = ()  # (upstream component, grouping kind: "fields"...)
    source: bool = False  # a spout: its rate is the demand, not a capacity
    edge: bool = False  # placed on the agents (rescaled within their footprint)
    copies: int = 1  # an edge component: the agents that run it, each with ``parallelism``
    cap: int | None = None  # an edge component: the most tasks its agents have room for


@dataclass(frozen=True)
class Sample:
    """One reading of a topology: its revision, components and tasks, at ``at`` (monotonic s)."""

    topology: str
    revision: int
    at: float
    components: dict[str, ComponentInfo]
    tasks: dict[int, TaskSample]
    # the records its agents ingested that its edge subgraphs have not checkpointed yet
    # (summed over the agents; None: no agent reports one), and whether every agent running
    # its edge subgraph has its uplink to the cloud up
    ingest_backlog: float | None = None
    uplinks_up: bool = True
    backlog_at: float | None = None  # when the backlog was read, if not at ``at``
    ingest_end: float | None = None  # the end offsets of the logs they ingest into, summed


@dataclass(frozen=True)
class IngestBacklog:
    """An edge subgraph's ingest backlog over one interval: how far behind, how fast it grows."""

    records: float  # at the interval's end
    growth: float  # records per second (negative: it shrinks)
    rate: float | None = None  # records ingested per second (None: not known)


@dataclass(frozen=True)
class HealthPolicy:
    """A topology's bounds for the health manager (config ``headwater.health.*``)."""

    mode: Mode = Mode.OFF
    min_parallelism: int = 1
    max_parallelism: int = 8
    per_component: dict[str, tuple[int, int]] = field(default_factory=dict)  # name: (min, max)
    target_utilization: float = 0.7  # busy fraction a rescale aims each task at
    stabilization_s: float = 120.0  # a symptom must last this long before a scale down
    cooldown_s: float = 60.0  # after an action on a component, no other on it
    scale_down_cap: float = 0.5  # a scale down keeps at least this share of the tasks
    blacklist_s: float = 600.0  # an action that did not help is not repeated for this long

    def bounds(self, component: str) -> tuple[int, int]:
        return self.per_component.get(component, (self.min_parallelism, self.max_parallelism))


@dataclass(frozen=True)
class Diagnosis:
    """A symptom's cause, with the figures that show it."""

    kind: str  # "under-provisioned", "over-provisioned", "slow-instance", "skew", "edge-overload"
    component: str
    reason: str  # one sentence an operator reads
    evidence: dict[str, Any] = field(default_factory=dict)
    tasks: tuple[int, ...] = ()  # the tasks concerned (a slow instance, a hot task)


@dataclass(frozen=True)
class Action:
    """What resolves a diagnosis: a live edit with author ``health-manager`` and its reason."""

    kind: str  # "rescale", "restart", "report"
    component: str
    reason: str
    parallelism: int | None = None  # rescale: the new parallelism
    tasks: tuple[int, ...] = ()  # restart: the tasks
    diagnosis: Diagnosis | None = None

    def key(self) -> tuple[str, str]:
        """What black-listing remembers: the kind of action on the component."""
        return (self.kind, self.component)


@dataclass(frozen=True)
class RevisionOutcome:
    """A revision the health manager's edits made, as the topology's revision history has it
    now: what ``HealthManager.settle`` follows an applied action's outcome by."""

    revision: int
    reason: str  # the action's reason, kept on the revision
    at: float  # when it was made (wall time, s)
    status: str  # "applying", "applied", "rolled_back", "refused"
    error: str = ""  # why it was rolled back or refused
