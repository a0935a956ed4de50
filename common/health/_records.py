"""The health manager's records (its taken actions, black-listed actions, the report) in
JSON, and the store it keeps them in across restarts."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from headwater.common.statemgr import Record, as_record

from ._model import Action, Diagnosis, Mode
from ._rates import ComponentRates

log = logging.getLogger("headwater.health")
PENDING = "pending"


class StateStore(Protocol):
    """Where a manager keeps its state across restarts."""

    def load(self) -> dict[str, Any] | None: ...

    def save(self, state: dict[str, Any]) -> None:
        """Atomically: a reader sees the previous state or this one, never a mix."""
        ...


class JsonFileStore:
    """A state store in one JSON record of the state manager (written whole: a file written
    aside, fsynced, then renamed over; or a znode ZooKeeper acknowledged). ``path``: the
    record, or its file's path (its folder is made when it is saved)."""

    def __init__(self, path: str | os.PathLike[str] | Record) -> None:
        self._kept = path if isinstance(path, Record) else None
        # its file (a record's place, for messages, when it is kept elsewhere)
        self.path = Path(path.where if isinstance(path, Record) else path)

    def _record(self) -> Record:
        return self._kept if self._kept is not None else as_record(self.path)

    def load(self) -> dict[str, Any] | None:
        record = self._record()
        try:
            kept = record.read()
            if kept is None:
                return None
            data = json.loads(kept.decode("utf-8"))
        except ValueError as exc:  # written whole: only a hand breaks it (a StateError is
            # raised: a record that cannot be read now is not one to start afresh over)
            log.warning(
                "%s cannot be read (%s): the health manager starts afresh", record.where, exc
            )
            return None
        return data if isinstance(data, dict) else None

    def save(self, state: dict[str, Any]) -> None:
        if self._kept is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._record().write(json.dumps(state, sort_keys=True).encode())


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


Figures = dict[str, float]


def rate_figures(r: ComponentRates | None) -> Figures | None:
    """A component's rates over one window, as an action's ``before`` and ``after`` record
    them: records/s arriving and processed (all its tasks), its tasks' mean busy share and
    the busiest one's; None where it was not measured (or a task of it was silent)."""
    if r is None or not r.tasks or not r.complete:
        return None
    return {
        "arrival": round(r.arrival, 3),
        "processed": round(r.processed, 3),
        "busy": round(r.busy, 3),
        "busy_max": round(r.busy_max, 3),
    }


def _figures(v: Any) -> Figures | None:
    return {str(k): float(x) for k, x in v.items()} if isinstance(v, dict) else None


@dataclass(frozen=True)
class TakenAction:
    """An action the manager returned: when (wall time, s), the revision its edit made, and
    what became of it: "pending" (not applied yet: its edit is being made or its revision
    applied), "applied", "rolled back: <why>" or "failed: <why>"; its component's rates when
    it was taken (``before``) and over a window begun once it was applied (``after``)."""

    action: Action
    at: float
    revision: int | None = None
    outcome: str = PENDING
    before: Figures | None = None
    after: Figures | None = None
    # not kept: the sample time its ``after`` window may begin at (None: not known yet), and
    # whether its ``after`` is still to be measured (an action taken by this manager)
    after_from: float | None = dataclasses.field(default=None, compare=False)
    watched: bool = dataclasses.field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {
            "action": action_to_json(self.action),
            "at": self.at,
            "revision": self.revision,
            "outcome": self.outcome,
            "rates_before": self.before,
            "rates_after": self.after,
            # its after is still to come (not read back: a restart decides it again)
            "measuring": self.watched and self.outcome in (PENDING, "applied"),
        }

    @classmethod
    def from_json(cls, t: dict[str, Any]) -> TakenAction:
        rev = t.get("revision")
        outcome = str(t["outcome"])
        before = _figures(t.get("rates_before"))
        return cls(
            action_from_json(t["action"]),
            float(t["at"]),
            int(rev) if rev is not None else None,
            outcome,
            before,
            _figures(t.get("rates_after")),
            # one pending settles in this manager: its after is measured then
            watched=outcome == PENDING and before is not None,
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
    rates: dict[str, Figures] = dataclasses.field(default_factory=dict)  # at the last tick

    def to_json(self) -> dict[str, Any]:
        """What the REST API and the CLI show (a proposed action with its component's rates
        now, as ``rates``; a taken one with ``rates_before`` and ``rates_after``)."""
        return {
            "topology": self.topology,
            "mode": self.mode.value,
            "diagnoses": [diagnosis_to_json(d) for d in self.diagnoses],
            "proposed": [
                {**action_to_json(a), "rates": self.rates.get(a.component)} for a in self.proposed
            ],
            "taken": [t.to_json() for t in self.taken],
            "blacklisted": [dataclasses.asdict(b) for b in self.blacklisted],
        }
