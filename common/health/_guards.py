"""The guards between a diagnosis and an action: bounds, cooldown, stabilization, black-list.

- bounds: a rescale is clamped to the component's ``[min, max]``, and an edge component's
  to the room its agents have (``cap``, their footprint limit); a scale down keeps at
  least ``scale_down_cap`` of the tasks; a rescale the clamping makes a no-op, or turns
  from a scale up into a scale down (an agent with less room than it runs), is dropped;
- cooldown: after an action on a component, no other on it for ``cooldown_s`` (a report
  only holds back the same report);
- stabilization: a scale down needs its diagnosis seen on every tick for
  ``stabilization_s``, and as long since the component's last rescale; no rescale
  reverses the component's previous one within ``stabilization_s`` of it (no oscillation);
  a scale up within ``stabilization_s`` of the previous one needs the component to have
  caught up in between (the drain of the switch's backlog read as demand overshot by a task);
- black-list (Dhalion): once an action's cooldown has passed, if the diagnosis it resolved
  is still there, the action did not help: its kind is black-listed on that component for
  ``blacklist_s``. Reports are never black-listed, nor a rescale that the bounds or the
  scale-down cap kept short of its DS2 target (its symptom is expected to stay).

Times are readings of the manager's clock (seconds); the state is plain JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ._diagnose import OVER
from ._model import Action, Diagnosis, HealthPolicy


@dataclass
class _Taken:
    kind: str
    component: str
    diagnosis: str  # the kind of diagnosis it resolved ("" for none)
    at: float
    direction: int = 0  # a rescale: +1 up, -1 down
    judged: bool = False


@dataclass(frozen=True)
class Ban:
    kind: str
    component: str
    until: float
    why: str


class Guards:
    """What was done and when, and what it allows next."""

    def __init__(self) -> None:
        self._since: dict[tuple[str, str], float] = {}  # diagnosis seen on every tick since
        self._taken: list[_Taken] = []  # the latest action per (kind, component)
        self._bans: dict[tuple[str, str], Ban] = {}

    def observe(self, diagnoses: list[Diagnosis], now: float, policy: HealthPolicy) -> None:
        """Record the symptoms seen now and judge the actions whose cooldown has passed."""
        seen = {(d.kind, d.component) for d in diagnoses}
        self._since = {k: self._since.get(k, now) for k in seen}
        for t in self._taken:
            if t.judged or now - t.at < policy.cooldown_s:
                continue
            t.judged = True
            if t.kind != "report" and (t.diagnosis, t.component) in seen:
                why = f"{t.diagnosis} persisted {now - t.at:.0f}s after the {t.kind}"
                self._bans[(t.kind, t.component)] = Ban(
                    t.kind, t.component, now + policy.blacklist_s, why
                )
        self._bans = {k: b for k, b in self._bans.items() if b.until > now}

    def admit(
        self,
        action: Action,
        current: int,
        policy: HealthPolicy,
        now: float,
        cap: int | None = None,
    ) -> Action | None:
        """The action as the guards let it through (a rescale clamped, to ``cap`` too: the
        most tasks an edge component's agents have room for), or None."""
        if action.key() in self._bans:
            return None
        if any(self._cooling(t, action, now, policy) for t in self._taken):
            return None
        if action.kind != "rescale" or action.parallelism is None:
            return action
        wanted = self._clamp(action.component, action.parallelism, current, policy)
        if cap is not None and action.parallelism > current:
            wanted = min(wanted, cap)
        if wanted == current or (wanted < current < action.parallelism):
            return None
        direction = 1 if wanted > current else -1
        if direction < 0 and not self._stable(action, now, policy):
            return None
        if direction > 0 and self._catching_up(action, now, policy):
            return None
        if self._reverses(action.component, direction, now, policy):
            return None
        return Action(
            action.kind, action.component, action.reason, wanted, action.tasks, action.diagnosis
        )

    def record(self, action: Action, current: int, now: float) -> None:
        """An action is taken (or pending: it counts the same)."""
        direction = 0
        if action.kind == "rescale" and action.parallelism is not None:
            direction = 1 if action.parallelism > current else -1
        d = action.diagnosis
        # a rescale the bounds or the cap kept short of its target is a step on the way:
        # its symptom is expected to stay, so it is not judged
        partial = (
            direction != 0 and d is not None and d.evidence.get("target") != action.parallelism
        )
        self._taken = [t for t in self._taken if (t.kind, t.component) != action.key()]
        kind = d.kind if d is not None else ""
        self._taken.append(_Taken(action.kind, action.component, kind, now, direction, partial))

    def failed(self, action: Action) -> None:
        """A failed action is not judged (its cooldown still holds), and moved nothing: a
        rescale that failed or was rolled back is no step up or down for the guards that
        follow the last one (catching up, reversing)."""
        for t in self._taken:
            if (t.kind, t.component) == action.key():
                t.judged, t.direction = True, 0

    def bans(self, now: float) -> list[Ban]:
        return sorted(
            (b for b in self._bans.values() if b.until > now), key=lambda b: (b.component, b.kind)
        )

    @staticmethod
    def _clamp(component: str, wanted: int, current: int, policy: HealthPolicy) -> int:
        lo, hi = policy.bounds(component)
        if wanted < current:
            wanted = max(wanted, math.ceil(current * policy.scale_down_cap))
        return max(lo, min(hi, wanted))

    @staticmethod
    def _cooling(t: _Taken, action: Action, now: float, policy: HealthPolicy) -> bool:
        if now - t.at >= policy.cooldown_s or t.component != action.component:
            return False
        # a report holds back only the same report; any other action, all but reports
        return t.kind == action.kind if "report" in (t.kind, action.kind) else True

    def _stable(self, action: Action, now: float, policy: HealthPolicy) -> bool:
        kind = action.diagnosis.kind if action.diagnosis is not None else OVER
        since = self._since.get((kind, action.component))
        last = [
            t.at for t in self._taken if t.component == action.component and t.kind == "rescale"
        ]
        since = max([since, *last]) if since is not None else None  # a fresh window after each
        return since is not None and now - since >= policy.stabilization_s

    def _catching_up(self, action: Action, now: float, policy: HealthPolicy) -> bool:
        """After a scale up, the component drains the backlog of the switch (and of the
        deficit before it) at its new rate, and its sources emit faster than their input:
        DS2 reads that as demand (one task too many, in a run). A further scale up within
        ``stabilization_s`` needs the component to have caught up in between (its diagnosis
        absent on one tick at least since that scale up); seen on every tick since, it waits
        out the window."""
        kind = action.diagnosis.kind if action.diagnosis is not None else ""
        since = self._since.get((kind, action.component))
        ups = [
            t.at
            for t in self._taken
            if t.component == action.component and t.kind == "rescale" and t.direction > 0
        ]
        if not ups or since is None or now - max(ups) >= policy.stabilization_s:
            return False
        return since <= max(ups)

    def _reverses(self, component: str, direction: int, now: float, policy: HealthPolicy) -> bool:
        last = [t for t in self._taken if t.component == component and t.kind == "rescale"]
        return any(t.direction == -direction and now - t.at < policy.stabilization_s for t in last)

    def to_json(self) -> dict[str, Any]:
        return {
            "since": [[k, c, at] for (k, c), at in sorted(self._since.items())],
            "taken": [
                {
                    "kind": t.kind,
                    "component": t.component,
                    "diagnosis": t.diagnosis,
                    "at": t.at,
                    "direction": t.direction,
                    "judged": t.judged,
                }
                for t in self._taken
            ],
            "bans": [
                {"kind": b.kind, "component": b.component, "until": b.until, "why": b.why}
                for b in self._bans.values()
            ],
        }

    @classmethod
    def from_json(cls, state: dict[str, Any], now: float) -> Guards:
        """The guards a previous manager saved; a time after ``now`` (a clock that went back
        with the restart) counts as ``now``."""
        g = cls()
        g._since = {(str(k), str(c)): min(float(at), now) for k, c, at in state.get("since", [])}
        for t in state.get("taken", []):
            g._taken.append(
                _Taken(
                    str(t["kind"]),
                    str(t["component"]),
                    str(t.get("diagnosis", "")),
                    min(float(t["at"]), now),
                    int(t.get("direction", 0)),
                    bool(t.get("judged", False)),
                )
            )
        for b in state.get("bans", []):
            ban = Ban(str(b["kind"]), str(b["component"]), float(b["until"]), str(b["why"]))
            g._bans[(ban.kind, ban.component)] = ban
        return g
