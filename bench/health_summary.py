"""What ``bench/health.py`` reports of one topology's run: actions, phases, rises and falls.

A ``Trace`` turns the metrics view read every second into cumulative figures that never go
back across a rescale (each task's counters are summed from its first reading, whatever
tasks the component has by then). ``summarize`` reads it with the topology's health reports
and revisions.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

LAG_OK_S = 5.0  # resolved: the records written not yet processed, under this many seconds'
# worth at the rise's rate


@dataclass(frozen=True)
class Phase:
    name: str
    start: float  # s from the scenario's start
    end: float
    rate: float  # records/s written

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "start_s": self.start, "end_s": self.end, "rate": self.rate}


@dataclass
class Point:
    t: float
    written: int
    processed: float  # by counter, all its tasks
    held_ms: float  # the spout throttled by its stream manager (backpressure)
    committed: float  # the log's offset the spout committed (through a checkpoint)
    parallelism: int  # counter's tasks in the plan
    revision: int


@dataclass
class Trace:
    points: list[Point] = field(default_factory=list)
    _last: dict[tuple[str, str], float] = field(default_factory=dict)
    _sums: dict[str, float] = field(default_factory=lambda: {"processed": 0.0, "held": 0.0})

    def _add(self, task: str, key: str, value: float) -> float:
        before = self._last.get((task, key), 0.0)
        self._last[(task, key)] = value
        return value - before if value >= before else value  # a reset counter: from zero

    def add(self, t: float, written: int, view: dict[str, Any], revision: int) -> None:
        """One reading of the metrics view: counter's tasks' ``executed``; the time the
        stream managers throttled the spout (``throttled_ms`` of each container: the tasks'
        own ``backpressure_ms``, an emit waiting for room, stayed 0 in these runs)."""
        parallelism = 0
        for task, v in view["tasks"].items():
            if v.get("component") == "counter":
                parallelism += 1
                self._sums["processed"] += self._add(task, "executed", float(v.get("executed", 0)))
        committed = 0.0
        for container, v in (view.get("containers") or {}).items():
            held = float(v.get("throttled_ms", 0))
            self._sums["held"] += self._add(f"container:{container}", "held", held)
            committed += sum(float(x) for k, x in v.items() if k.startswith("log_committed:"))
        sums = self._sums
        p = Point(t, written, sums["processed"], sums["held"], committed, parallelism, revision)
        self.points.append(p)


def _lag(p: Point) -> float:
    """Records written not yet committed by the spout (its offset moves once a checkpoint
    completes, every 0.5 s: the records before it went through ``counter`` and the sink).
    Not the records ``counter`` processed: its tasks' counters lose a few records' worth and
    count the replays at each rescale."""
    return max(0.0, p.written - p.committed)


def _rate(points: list[Point], attr: str) -> float | None:
    if len(points) < 2 or points[-1].t <= points[0].t:
        return None
    delta = float(getattr(points[-1], attr)) - float(getattr(points[0], attr))
    return round(delta / (points[-1].t - points[0].t), 1)


def _phase(points: list[Point], ph: Phase) -> dict[str, Any]:
    inside = [p for p in points if ph.start <= p.t < ph.end]
    settled = [p for p in inside if p.t >= ph.start + (ph.end - ph.start) / 2]
    held = (inside[-1].held_ms - inside[0].held_ms) / 1000 if len(inside) > 1 else 0.0
    return {
        "phase": ph.name,
        "rate": ph.rate,
        "written_rps": _rate(inside, "written"),
        "processed_rps": _rate(inside, "processed"),
        "processed_rps_second_half": _rate(settled, "processed"),
        "held_back_s": round(held, 1),
        "max_lag_records": round(max((_lag(p) for p in inside), default=0.0)),
        "tasks": sorted({p.parallelism for p in inside}),
    }


def _actions(
    reports: list[tuple[float, dict[str, Any]]], done: dict[str, Any], wall0: float
) -> list[dict[str, Any]]:
    taken = [t for t in done["report"]["taken"] if t["action"]["kind"] == "rescale"]
    out, current = [], 1
    for t in taken:
        to = int(t["action"]["parallelism"])
        out.append(
            {
                "at_s": round(t["at"] - wall0, 1),
                "from": current,
                "to": to,
                "outcome": t["outcome"],
                "reason": t["action"]["reason"],
            }
        )
        current = to
    return out


def _applied(points: list[Point], action: dict[str, Any]) -> float | None:
    """The first second, from the action on, that the plan had its parallelism."""
    for p in points:
        if p.t >= action["at_s"] - 1 and p.parallelism == action["to"]:
            return round(p.t, 1)
    return None


def _resolution(points: list[Point], ph: Phase, until: float) -> float | None:
    """Seconds from the phase's start to the lag back under LAG_OK_S seconds' worth of its
    rate for good (up to ``until``); None if it never was."""
    window = [p for p in points if ph.start <= p.t < until]
    late = [p.t for p in window if _lag(p) > LAG_OK_S * ph.rate]
    if not late:
        return 0.0
    after = [p.t for p in window if p.t > late[-1]]
    return round(after[0] - ph.start, 1) if after else None


def _changes(points: list[Point], phases: list[Phase], actions: list[dict[str, Any]]) -> list[Any]:
    """Per rise and fall: the actions within it, when seen applied, when resolved."""
    out = []
    for i, ph in enumerate(phases[1:], 1):
        rise = ph.rate > phases[i - 1].rate
        nxt = [q.start for j, q in enumerate(phases) if j > i and q.rate > phases[j - 1].rate]
        until = (nxt[0] if nxt else phases[-1].end) if rise else ph.end  # up to the next rise
        mine = [a for a in actions if ph.start <= a["at_s"] < ph.end]
        out.append(
            {
                "change": f"{'rise' if rise else 'fall'} at {ph.start:.0f}s",
                "actions_after_s": [round(a["at_s"] - ph.start, 1) for a in mine],
                "applied_after_s": [
                    round(s - ph.start, 1) if (s := _applied(points, a)) is not None else None
                    for a in mine
                ],
                "lag_ok_after_s": _resolution(points, ph, until) if rise else None,
            }
        )
    return out


def _reversed(actions: list[dict[str, Any]], stabilization_s: float) -> list[Any]:
    out = []
    for a, b in itertools.pairwise(actions):
        up_a, up_b = a["to"] > a["from"], b["to"] > b["from"]
        if up_a != up_b and b["at_s"] - a["at_s"] < stabilization_s:
            out.append([a["at_s"], b["at_s"]])
    return out


def _diagnoses(reports: list[tuple[float, dict[str, Any]]]) -> dict[str, Any]:
    """Each (kind, component) the reports listed: first and last seen, how many reports."""
    seen: dict[str, dict[str, Any]] = {}
    proposed: list[Any] = []
    for t, r in reports:
        for d in r.get("diagnoses", []):
            s = seen.setdefault(f"{d['kind']} {d['component']}", {"first_s": t, "reports": 0})
            s["last_s"], s["reports"] = t, s["reports"] + 1
        for a in r.get("proposed", []):
            entry = [a["kind"], a["component"], a.get("parallelism")]
            if not proposed or proposed[-1][1:] != entry:
                proposed.append([round(t, 1), *entry])
    return {"seen": seen, "proposed": proposed}


def summarize(
    trace: Trace,
    reports: list[tuple[float, dict[str, Any]]],
    phases: list[Phase],
    done: dict[str, Any],
    wall0: float,
    stabilization_s: float,
) -> dict[str, Any]:
    points = trace.points
    actions = _actions(reports, done, wall0)
    ours = [r for r in done["revisions"] if r["author"] == "health-manager"]
    held = (points[-1].held_ms - points[0].held_ms) / 1000 if len(points) > 1 else 0.0
    return {
        "trace": [
            [
                round(p.t, 1),
                p.written,
                round(p.processed),
                round(p.committed),
                round(p.held_ms),
                p.parallelism,
            ]
            for p in points
        ],
        "actions": actions,
        "revisions_by_health_manager": len(ours),
        "reversed_within_stabilization": _reversed(actions, stabilization_s),
        "changes": _changes(points, phases, actions),
        "phases": [_phase(points, ph) for ph in phases],
        "processed_rps_whole_run": _rate(points, "processed"),
        "held_back_s": round(held, 1),
        "diagnoses": _diagnoses(reports),
        "records": done["records"],
        "exactly_once": done["exactly_once"],
    }
