"""The health manager of one topology: samples in, actions out, its state in a store.

Each ``tick`` takes a sample of the topology's metrics, derives the rates since the
previous one, DS2's target parallelism per component and the diagnoses, and lets the
guards decide which of the actions resolving them may go now. In ``AUTO`` those are
returned, and recorded as pending in the store *before* ``tick`` returns them: a manager
restarted between returning an action and hearing it was applied counts it as taken (its
cooldown and black-listing hold), so it never repeats it. In ``RECOMMEND`` they are only
proposed, in ``report()``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ._diagnose import diagnose, resolve
from ._ds2 import targets
from ._guards import Guards
from ._model import Action, Diagnosis, HealthPolicy, IngestBacklog, Mode, Sample
from ._rates import ComponentRates, rates

HISTORY = 50  # the taken actions a report keeps
RATE_WINDOW_S = 5.0
"""Rates are taken over at least this long (less a tenth, for a tick's jitter). A task
reports its counters every second and its stream manager forwards them every second, the
two unsynchronised: read a second apart, a counter moved by 0, 1 or 2 seconds' worth, which
showed a balanced task as idle or twice as loaded (a false skew, a wrong target). Over
5 s that error is a fifth at most; a loop that samples less often uses its previous sample."""

log = logging.getLogger("headwater.health")


class StateStore(Protocol):
    """Where a manager keeps its state across restarts."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any]) -> None:
        """Atomically: a reader sees the previous state or this one, never a mix."""
        ...


class JsonFileStore:
    """A state store in one JSON file (written aside, fsynced, then renamed over)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:  # written aside and renamed: only a hand breaks it
            log.warning("%s cannot be read (%s): the health manager starts afresh", self.path, exc)
            return None
        return data if isinstance(data, dict) else None

    def save(self, state: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(state, f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
        fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def diagnosis_to_json(d: Diagnosis) -> dict[str, Any]:
    return {
        "kind": d.kind,
        "component": d.component,
        "reason": d.reason,
        "evidence": d.evidence,
        "tasks": list(d.tasks),
    }


def diagnosis_from_json(d: dict[str, Any]) -> Diagnosis:
    return Diagnosis(
        str(d["kind"]),
        str(d["component"]),
        str(d["reason"]),
        dict(d.get("evidence", {})),
        tuple(d.get("tasks", ())),
    )


def action_to_json(a: Action) -> dict[str, Any]:
    return {
        "kind": a.kind,
        "component": a.component,
        "reason": a.reason,
        "parallelism": a.parallelism,
        "tasks": list(a.tasks),
        "diagnosis": diagnosis_to_json(a.diagnosis) if a.diagnosis is not None else None,
    }


def action_from_json(a: dict[str, Any]) -> Action:
    d = a.get("diagnosis")
    p = a.get("parallelism")
    return Action(
        str(a["kind"]),
        str(a["component"]),
        str(a["reason"]),
        int(p) if p is not None else None,
        tuple(int(t) for t in a.get("tasks", ())),
        diagnosis_from_json(d) if isinstance(d, dict) else None,
    )


@dataclass(frozen=True)
class TakenAction:
    """An action the manager returned: when (wall time, s), and what became of it."""

    action: Action
    at: float
    revision: int | None = None
    outcome: str = "pending"  # "pending", "applied", "failed: <why>"

    def to_json(self) -> dict[str, Any]:
        return {
            "action": action_to_json(self.action),
            "at": self.at,
            "revision": self.revision,
            "outcome": self.outcome,
        }

    @classmethod
    def from_json(cls, t: dict[str, Any]) -> TakenAction:
        rev = t.get("revision")
        return cls(
            action_from_json(t["action"]),
            float(t["at"]),
            int(rev) if rev is not None else None,
            str(t["outcome"]),
        )


@dataclass(frozen=True)
class Blacklisted:
    """An action kind the manager will not take on a component until ``until`` (wall, s)."""

    kind: str
    component: str
    until: float
    why: str


@dataclass(frozen=True)
class HealthReport:
    topology: str
    mode: Mode
    diagnoses: list[Diagnosis]
    proposed: list[Action]
    taken: list[TakenAction]
    blacklisted: list[Blacklisted]

    def to_json(self) -> dict[str, Any]:
        """What the REST API and the CLI show."""
        return {
            "topology": self.topology,
            "mode": self.mode.value,
            "diagnoses": [diagnosis_to_json(d) for d in self.diagnoses],
            "proposed": [action_to_json(a) for a in self.proposed],
            "taken": [t.to_json() for t in self.taken],
            "blacklisted": [dataclasses.asdict(b) for b in self.blacklisted],
        }


def ingest_backlog(before: Sample, after: Sample) -> IngestBacklog | None:
    """The edge subgraphs' ingest backlog between two samples (None: not reported in both)."""
    if before.ingest_backlog is None or after.ingest_backlog is None:
        return None
    then = before.backlog_at if before.backlog_at is not None else before.at
    now = after.backlog_at if after.backlog_at is not None else after.at
    if now <= then:
        return None
    growth = (after.ingest_backlog - before.ingest_backlog) / (now - then)
    rate = None
    b, a = before.ingest_end, after.ingest_end
    if b is not None and a is not None and a >= b:  # ends never go back: else a log replaced
        rate = (a - b) / (now - then)
    return IngestBacklog(after.ingest_backlog, growth, rate)


def edge_demands(
    sample: Sample, measured: dict[str, ComponentRates], ingest: IngestBacklog | None
) -> dict[str, float]:
    """The demand on each edge source, where the ingest backlog is known: its share of the
    rate the agents ingest at, else what it emitted plus its share of the backlog's growth."""
    sources = [c.name for c in sample.components.values() if c.edge and c.source]
    if ingest is None or not sources:
        return {}
    if ingest.rate is not None:
        return {n: ingest.rate / len(sources) for n in sources}
    more = max(ingest.growth, 0.0) / len(sources)
    return {n: (measured[n].emitted if n in measured else 0.0) + more for n in sources}


class HealthManager:
    """Detect, diagnose, resolve, for one topology, under its policy."""

    def __init__(
        self,
        topology: str,
        policy: HealthPolicy,
        store: StateStore,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.topology = topology
        self.policy = policy
        self._store = store
        self._clock = clock
        self._wall = wall
        self._samples: list[Sample] = []  # the recent samples, oldest first
        self._diagnoses: list[Diagnosis] = []
        self._proposed: list[Action] = []
        self._taken: list[TakenAction] = []
        self._guards = Guards()
        self._load()

    def set_policy(self, policy: HealthPolicy) -> None:
        self.policy = policy
        if policy.mode is not Mode.RECOMMEND:
            self._proposed = []
        if policy.mode is Mode.OFF:
            self._diagnoses = []

    def tick(self, sample: Sample) -> list[Action]:
        """The actions to apply now (empty unless the mode is AUTO)."""
        if sample.topology != self.topology:
            return []
        previous = self._base(sample)
        if self.policy.mode is Mode.OFF or previous is None:
            return []
        now = self._clock()
        measured = rates(previous, sample)
        ingest = ingest_backlog(previous, sample)
        utilization = self.policy.target_utilization
        wanted = targets(
            sample.components, measured, utilization, edge_demands(sample, measured, ingest)
        )
        self._diagnoses = diagnose(
            sample.components, measured, wanted, utilization, ingest, sample.uplinks_up
        )
        self._guards.observe(self._diagnoses, now, self.policy)
        actions: list[Action] = []
        for d in self._diagnoses:
            info = sample.components[d.component]
            for a in resolve(d):
                admitted = self._guards.admit(a, info.parallelism, self.policy, now, info.cap)
                if admitted is not None:
                    actions.append(admitted)
        if self.policy.mode is Mode.RECOMMEND:
            self._proposed = actions
            self._save()
            return []
        self._proposed = []
        for a in actions:
            self._guards.record(a, sample.components[a.component].parallelism, now)
            self._taken.append(TakenAction(a, self._wall()))
        self._taken = self._taken[-HISTORY:]
        self._save()  # pending before returned: a restart never repeats them
        return actions

    def _base(self, sample: Sample) -> Sample | None:
        """The newest sample of the same revision at least ``RATE_WINDOW_S`` before ``sample``
        (None if none is: rates never span an edit, whose new tasks start at different
        times); keeps it, those after it and ``sample``."""
        earlier = [s for s in self._samples if s.at < sample.at and s.revision == sample.revision]
        old = [s for s in earlier if sample.at - s.at >= RATE_WINDOW_S * 0.9]
        base = old[-1] if old else None
        self._samples = [*(s for s in earlier if base is None or s.at >= base.at), sample]
        return base

    def applied(self, action: Action, revision: int | None, error: str | None) -> None:
        """What became of an action ``tick`` returned: its revision, or why it failed."""
        for i in range(len(self._taken) - 1, -1, -1):
            t = self._taken[i]
            if t.action == action and t.outcome == "pending":
                outcome = "applied" if error is None else f"failed: {error}"
                self._taken[i] = dataclasses.replace(t, revision=revision, outcome=outcome)
                break
        if error is not None:
            self._guards.failed(action)
        self._save()

    def report(self) -> HealthReport:
        now, wall = self._clock(), self._wall()
        bans = [
            Blacklisted(b.kind, b.component, wall + (b.until - now), b.why)
            for b in self._guards.bans(now)
        ]
        return HealthReport(
            self.topology,
            self.policy.mode,
            list(self._diagnoses),
            list(self._proposed),
            list(self._taken),
            bans,
        )

    def _save(self) -> None:
        self._store.save(
            {
                "version": 1,
                "topology": self.topology,
                "guards": self._guards.to_json(),
                "taken": [t.to_json() for t in self._taken],
            }
        )

    def _load(self) -> None:
        state = self._store.load()
        if not state or state.get("topology") != self.topology:
            return
        self._guards = Guards.from_json(state.get("guards", {}), self._clock())
        self._taken = [TakenAction.from_json(t) for t in state.get("taken", [])]
